// Helpers that write small .safetensors files for tests.
#ifndef DIFFUSIOND_TESTS_TESTING_CHECKPOINT_BUILDER_H_
#define DIFFUSIOND_TESTS_TESTING_CHECKPOINT_BUILDER_H_

#include <string>
#include <vector>

#include "core/checkpoint/safetensors_writer.h"
#include "gtest/gtest.h"

namespace diffusiond::testing {

struct TestTensor {
  TensorSpec spec;
  std::string bytes;  // exactly the tensor's data
};

// Returns a tensor whose bytes are `fill` repeated.
inline TestTensor filled_tensor(const std::string& name, DType dtype,
                                std::vector<int64_t> shape, char fill = 1) {
  int64_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= d;
  return TestTensor{TensorSpec{name, dtype, std::move(shape)}, std::string(n, fill)};
}

// Writes `tensors` to `path`; fails the test on error.
inline void write_safetensors(const std::string& path, const std::vector<TestTensor>& tensors) {
  std::vector<TensorSpec> specs;
  for (const TestTensor& t : tensors) specs.push_back(t.spec);
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(path, specs);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const TestTensor& t : tensors) {
    ASSERT_TRUE((*w)->append(t.bytes.data(), t.bytes.size()).ok());
  }
  ASSERT_TRUE((*w)->close().ok());
}

// A .safetensors file's bytes by hand, for headers no writer would make: the
// 8-byte little-endian length (`claimed_length`, or the header's own size
// when negative), the header, then `data_bytes` zeros.
inline std::string safetensors_bytes(const std::string& header, size_t data_bytes, int64_t claimed_length = -1) {
  const uint64_t length = claimed_length >= 0 ? claimed_length : header.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(length >> (8 * i));
  return out + header + std::string(data_bytes, '\0');
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_CHECKPOINT_BUILDER_H_
