// Reading tensors of a .safetensors file into libtorch tensors, for tests.
#ifndef DIFFUSIOND_TESTS_TESTING_TENSOR_FILE_H_
#define DIFFUSIOND_TESTS_TESTING_TENSOR_FILE_H_

#include <torch/types.h>

#include <memory>
#include <string>

#include "core/checkpoint/checkpoint.h"
#include "core/precision/torch_dtype.h"
#include "gtest/gtest.h"

namespace diffusiond::testing {

class TensorFile {
 public:
  explicit TensorFile(const std::string& path) {
    absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(path);
    EXPECT_TRUE(c.ok()) << c.status();
    if (c.ok()) ckpt_ = std::move(*c);
  }
  // Returns the tensor `name` (its own dtype), or an undefined tensor after
  // failing the test.
  torch::Tensor get(const std::string& name) const {
    const TensorRecord* t = ckpt_ == nullptr ? nullptr : ckpt_->find(name);
    if (t == nullptr) {
      ADD_FAILURE() << "no tensor " << name;
      return torch::Tensor();
    }
    torch::Tensor out = torch::empty(t->shape, torch::TensorOptions().dtype(storage_scalar_type(t->dtype)));
    EXPECT_TRUE(ckpt_->read(*t, static_cast<char*>(out.data_ptr())).ok());
    return out;
  }

 private:
  std::unique_ptr<Checkpoint> ckpt_;
};

// Largest absolute difference, as a double.
inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// The same over the rows where `mask` [B, L] is set (padding excluded).
inline double masked_diff(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask) {
  const torch::Tensor keep = mask.ne(0);
  return max_abs_diff(a.index({keep}), b.index({keep}));
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_TENSOR_FILE_H_
