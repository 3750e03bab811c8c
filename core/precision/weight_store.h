// WeightStore: a loaded model's parameters by name — dense tensors at their
// storage dtype and FP8 weights — plus the model's compute dtype, the only
// source of truth for the dtype every forward runs at.
//
// Not here: which parameter is stored how (precision_policy.h) or loading
// (core/loader).
#ifndef DIFFUSIOND_CORE_PRECISION_WEIGHT_STORE_H_
#define DIFFUSIOND_CORE_PRECISION_WEIGHT_STORE_H_

#include <torch/types.h>

#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/precision/fp8_weight.h"

namespace diffusiond {

// Filled by one loader, then read-only: concurrent reads are safe. The one
// exception is packing (packed_linear), which takes its own lock.
class WeightStore {
 public:
  explicit WeightStore(torch::ScalarType compute_dtype) : compute_dtype_(compute_dtype) {}

  // The dtype every forward of this model runs at; set at load.
  torch::ScalarType compute_dtype() const { return compute_dtype_; }

  // Adds a parameter. REQUIRES: `name` is not present yet.
  void add(const std::string& name, torch::Tensor dense);
  void add(const std::string& name, Fp8Weight fp8);

  // Replaces `fused` by consecutive row blocks of it, named `parts[i].first`
  // with `parts[i].second` rows each: zero-copy views of the same storage
  // (an FP8 weight's blocks share its scale), so nbytes() is unchanged.
  // INVALID_ARGUMENT if `fused` is missing, not at least 1-D, or the rows do
  // not add up; nothing changes then.
  absl::Status split_rows(absl::string_view fused,
                          const std::vector<std::pair<std::string, int64_t>>& parts);
  // Replaces `name` by a view of it with `shape` (same element count): zero
  // copy, so nbytes() is unchanged. INVALID_ARGUMENT if `name` is missing,
  // FP8 (its scale layout is per tensor, but no caller needs it), or the
  // element counts differ; nothing changes then.
  absl::Status reshape(absl::string_view name, const std::vector<int64_t>& shape);
  // Renames a parameter. INVALID_ARGUMENT if `from` is missing or `to` exists.
  absl::Status rename(absl::string_view from, const std::string& to);

  bool contains(absl::string_view name) const { return weights_.count(std::string(name)) != 0; }
  bool is_fp8(absl::string_view name) const;
  // Returns the parameter at `dtype`: FP8 weights decoded, dense tensors
  // converted when stored otherwise (returned as is when they match). The
  // result is the caller's; drop it after the forward. NOT_FOUND if absent.
  absl::StatusOr<torch::Tensor> materialize(absl::string_view name,
                                            torch::ScalarType dtype) const;
  // As materialize(name, compute_dtype()).
  absl::StatusOr<torch::Tensor> at_compute_dtype(absl::string_view name) const {
    return materialize(name, compute_dtype_);
  }
  // Packing for the CPU's bf16 matmuls (kernels/onednn_cpu.h): off until
  // the engine that loaded the model enables it, which it does only where
  // no device will ever copy the weights (a device placement reads the
  // stored bytes as they are).
  void enable_cpu_packing() { cpu_packing_ = true; }
  bool cpu_packing() const { return cpu_packing_; }
  // x · weightᵀ + bias through oneDNN, with the weight `name` packed in its
  // own bytes on its first use (so the bytes admitted stay the same): a bf16
  // weight, or an FP8 weight's codes, which then decode into the packed bf16
  // weight each forward. Empty when packing is off or the weight cannot be
  // packed (float32, a layout of other size): the caller takes the plain
  // path. REQUIRES: x is bf16 on the CPU. materialize()
  // unpacks a packed weight into a fresh tensor, so every other reader sees
  // it plain.
  std::optional<torch::Tensor> packed_linear(absl::string_view name, const torch::Tensor& x,
                                             const torch::Tensor& bias) const;

  // The stored representation, for tests and tools (a packed weight's bytes
  // as they are).
  const Fp8Weight* fp8(absl::string_view name) const;
  const torch::Tensor* dense(absl::string_view name) const;

  std::vector<std::string> names() const;
  int64_t size() const { return static_cast<int64_t>(weights_.size()); }
  int64_t fp8_count() const { return fp8_count_; }
  // Sum of the stored tensors' nbytes: what the cache is charged.
  int64_t nbytes() const { return nbytes_; }

 private:
  using Stored = std::variant<torch::Tensor, Fp8Weight>;

  // Bytes already counted under another name (views made by split_rows).
  void add_view(const std::string& name, Stored stored);

  // Whether `name` is packed; REQUIRES: pack_mu_ held (shared or not).
  bool packed_locked(absl::string_view name) const { return packed_.count(name) != 0; }

  const torch::ScalarType compute_dtype_;
  std::map<std::string, Stored, std::less<>> weights_;
  bool cpu_packing_ = false;
  // Shared while a packed weight is read, exclusive while one is packed.
  mutable std::shared_mutex pack_mu_;
  mutable std::set<std::string, std::less<>> packed_;      // packed in place
  mutable std::set<std::string, std::less<>> unpackable_;  // tried and refused
  int64_t nbytes_ = 0;
  int64_t fp8_count_ = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PRECISION_WEIGHT_STORE_H_
