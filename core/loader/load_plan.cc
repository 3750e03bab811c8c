#include "core/loader/load_plan.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/precision/torch_dtype.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

int64_t element_bytes(torch::ScalarType dtype) {
  return static_cast<int64_t>(c10::elementSize(dtype));
}

// Plans one tensor whose checkpoint dtype is a wide float (F64/F32/F16/BF16).
PlannedTensor plan_float(const TensorRecord& t, const StorageDecision& decision,
                         const PlanOptions& options) {
  PlannedTensor p;
  p.source = &t;
  p.reason = decision.reason;
  if (decision.kind == StorageDecision::Kind::kFp8 && t.dtype == DType::kF64) {
    p.reason = "F64 source (FP8 cast reads F32/F16/BF16)";
  } else if (decision.kind == StorageDecision::Kind::kFp8) {
    p.action = PlannedTensor::Action::kFp8Encode;
    p.storage_dtype = torch::kUInt8;
    p.fp8_format = *options.fp8.format;
    p.final_bytes = t.numel;
    return p;
  }
  p.storage_dtype = decision.kind == StorageDecision::Kind::kFloat32 ? torch::kFloat32
                                                                     : options.compute_dtype;
  const torch::ScalarType source = storage_scalar_type(t.dtype);
  if (options.keep_narrow && decision.kind == StorageDecision::Kind::kCompute &&
      element_bytes(source) < element_bytes(p.storage_dtype)) {
    p.storage_dtype = source;
    p.reason = absl::StrCat(p.reason.empty() ? "" : p.reason + "; ", "kept ", scalar_type_name(source),
                            " as stored, upcast to ", scalar_type_name(options.compute_dtype), " per use");
  }
  p.action = p.storage_dtype == source ? PlannedTensor::Action::kRead : PlannedTensor::Action::kCast;
  p.final_bytes = t.numel * element_bytes(p.storage_dtype);
  return p;
}

}  // namespace

int64_t LoadPlan::fp8_tensors() const {
  return std::count_if(tensors.begin(), tensors.end(), [](const PlannedTensor& t) {
    return t.action == PlannedTensor::Action::kFp8Encode ||
           t.action == PlannedTensor::Action::kFp8Keep;
  });
}

std::string storage_name(const PlannedTensor& t) {
  if (t.action == PlannedTensor::Action::kFp8Encode ||
      t.action == PlannedTensor::Action::kFp8Keep) {
    return std::string("fp8-") + fp8_format_name(t.fp8_format);
  }
  return scalar_type_name(t.storage_dtype);
}

std::map<std::string, int64_t> LoadPlan::bytes_by_storage() const {
  std::map<std::string, int64_t> out;
  for (const PlannedTensor& t : tensors) out[storage_name(t)] += t.final_bytes;
  return out;
}

std::map<std::string, int64_t> LoadPlan::count_by_storage() const {
  std::map<std::string, int64_t> out;
  for (const PlannedTensor& t : tensors) ++out[storage_name(t)];
  return out;
}

absl::StatusOr<LoadPlan> plan_load(const Checkpoint& checkpoint, const PlanOptions& options) {
  return plan_tensors(
      checkpoint.tensors(),
      [&checkpoint](absl::string_view name) -> const TensorRecord* {
        auto it = checkpoint.fp8_scales().find(std::string(name));
        return it == checkpoint.fp8_scales().end() ? nullptr : checkpoint.find(it->second.scale_tensor);
      },
      checkpoint.path(), options);
}

absl::StatusOr<LoadPlan> plan_tensors(
    const std::vector<TensorRecord>& tensors,
    const std::function<const TensorRecord*(absl::string_view)>& scale_of,
    absl::string_view what, const PlanOptions& options) {
  DIFFUSIOND_ASSIGN_OR_RETURN(PrecisionPolicy policy,
                              PrecisionPolicy::create(options.fp8, options.declaration));
  const ParamClassifier classify =
      options.classifier ? options.classifier : ParamClassifier(classify_by_rule);
  LoadPlan plan;
  plan.compute_dtype = options.compute_dtype;
  plan.fp8 = options.fp8;
  plan.staging_chunk_bytes = std::max<int64_t>(options.staging_chunk_bytes, 64);
  std::set<std::string> names;
  for (const TensorRecord& t : tensors) {
    std::optional<std::string> name = options.rename ? options.rename(t.name) : t.name;
    if (!name.has_value()) {
      plan.dropped.push_back(t.name);
      continue;
    }
    if (!names.insert(*name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": two tensors map to '", *name, "' (one is '", t.name, "')"));
    }
    PlannedTensor p;
    if (std::optional<Fp8Format> format = fp8_format_of(t.dtype); format.has_value()) {
      p.source = &t;
      p.action = PlannedTensor::Action::kFp8Keep;
      p.storage_dtype = torch::kUInt8;
      p.fp8_format = *format;
      p.final_bytes = t.nbytes;
      p.scale = scale_of(t.name);
      if (p.scale != nullptr) {
        p.reason = absl::StrCat("FP8 in the checkpoint, scale ", p.scale->name);
      } else {
        p.reason = "FP8 in the checkpoint, no scale (1.0)";
      }
    } else if (is_wide_float(t.dtype)) {
      p = plan_float(t, policy.decide(*name, classify(*name, t.shape)), options);
    } else {
      p.source = &t;
      p.storage_dtype = storage_scalar_type(t.dtype);
      p.final_bytes = t.nbytes;
      p.reason = absl::StrCat(dtype_name(t.dtype), " kept as is (not a float)");
    }
    if (p.action == PlannedTensor::Action::kCast ||
        p.action == PlannedTensor::Action::kFp8Encode) {
      plan.staging_bytes = std::max(plan.staging_bytes,
                                    std::min(t.nbytes, plan.staging_chunk_bytes));
    }
    p.name = std::move(*name);
    plan.source_bytes += t.nbytes;
    plan.final_bytes += p.final_bytes;
    plan.tensors.push_back(std::move(p));
  }
  return plan;
}

}  // namespace diffusiond
