// LoadPlan: what a load will hold, computed from checkpoint headers alone
// (no tensor data is read): per tensor its final storage and why, the total
// final bytes, and the staging buffer conversions need. The reservation a
// load asks the cache for is final + staging.
#ifndef DIFFUSIOND_CORE_LOADER_LOAD_PLAN_H_
#define DIFFUSIOND_CORE_LOADER_LOAD_PLAN_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/checkpoint/checkpoint.h"
#include "core/precision/param_kind.h"
#include "core/precision/precision_policy.h"
#include "core/util/bytes.h"

namespace diffusiond {

struct PlanOptions {
  // The model's compute dtype; tensors that are not FP8 and not kept in
  // float32 are stored at it. Default float32 (CPU).
  torch::ScalarType compute_dtype = torch::kFloat32;
  Fp8Options fp8;                    // default: FP8 storage off
  // Keep a float tensor that the checkpoint stores narrower than the compute
  // dtype (bfloat16 or float16 under float32) as stored, instead of widening
  // it at load: forwards upcast it per use (WeightStore::materialize), which
  // is exact, so results do not change while its RAM halves. Keep-in-fp32
  // modules are still widened. Default off.
  bool keep_narrow = false;
  PrecisionDeclaration declaration;  // the model's skip / keep-in-fp32 lists
  // Tells layer weights from the rest, by canonical name; default
  // classify_by_rule.
  ParamClassifier classifier;
  // Maps a checkpoint tensor name to the name the model uses (e.g. original
  // single-file keys to diffusers keys); nothing to leave a tensor out.
  // Default: names are kept.
  std::function<std::optional<std::string>(absl::string_view)> rename;
  // Conversions go through a staging buffer of at most this many bytes, one
  // chunk of a tensor at a time, so staging never needs a whole tensor.
  // Default 16 MiB.
  int64_t staging_chunk_bytes = 16 * kMiB;
};

struct PlannedTensor {
  enum class Action {
    kRead,       // bytes read straight into the final tensor
    kCast,       // read through staging, converted to storage_dtype
    kFp8Encode,  // read through staging, encoded to FP8 codes
    kFp8Keep,    // FP8 codes in the file, read straight in; scale kept
  };
  const TensorRecord* source = nullptr;  // owned by the Checkpoint
  std::string name;                      // the name the loaded model uses
  Action action = Action::kRead;
  torch::ScalarType storage_dtype = torch::kFloat32;  // kByte for FP8 codes
  Fp8Format fp8_format = Fp8Format::kE4M3Fn;          // for the FP8 actions
  const TensorRecord* scale = nullptr;                // kFp8Keep with a scale tensor
  int64_t final_bytes = 0;
  std::string reason;  // why it is stored this way
};

struct LoadPlan {
  std::vector<PlannedTensor> tensors;  // in read order
  std::vector<std::string> dropped;    // checkpoint tensors the model does not use
  torch::ScalarType compute_dtype = torch::kFloat32;
  Fp8Options fp8;
  int64_t source_bytes = 0;   // bytes of tensor data in the checkpoint
  int64_t final_bytes = 0;    // bytes the loaded model holds
  int64_t staging_bytes = 0;  // the staging buffer, 0 if nothing converts
  int64_t staging_chunk_bytes = 0;
  int64_t reservation_bytes() const { return final_bytes + staging_bytes; }
  int64_t fp8_tensors() const;
  // Final bytes and tensor counts keyed by storage: "fp8-e4m3fn",
  // "float32", "bfloat16", "int64", ...
  std::map<std::string, int64_t> bytes_by_storage() const;
  std::map<std::string, int64_t> count_by_storage() const;
};

// Plans the load of `checkpoint`. The plan points into it and must not
// outlive it. INVALID_ARGUMENT for a bad skip pattern.
absl::StatusOr<LoadPlan> plan_load(const Checkpoint& checkpoint, const PlanOptions& options);

// Plans tensors described by records alone (no files): for sizing a model
// from its config before any weights exist. `scale_of` returns the scale
// record of an FP8 tensor, or null. The plan points into `tensors`.
absl::StatusOr<LoadPlan> plan_tensors(
    const std::vector<TensorRecord>& tensors,
    const std::function<const TensorRecord*(absl::string_view)>& scale_of,
    absl::string_view what, const PlanOptions& options);

// "fp8-e4m3fn" for FP8 storage, else the storage dtype's name.
std::string storage_name(const PlannedTensor& t);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LOADER_LOAD_PLAN_H_
