#include "core/models/flux/flux_weight_layout.h"

#include <torch/types.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/flux/flux_params.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// Rows swapped per copy: the bounce buffer holds this many rows, so a
// 3072-wide bfloat16 modulation needs 384 KiB rather than a second copy.
constexpr int64_t kRowsPerChunk = 64;

}  // namespace

absl::Status swap_row_halves(WeightStore* weights, absl::string_view name, const std::string& to) {
  const torch::Tensor* dense = weights->dense(name);
  const Fp8Weight* fp8 = weights->fp8(name);
  if (dense == nullptr && fp8 == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no parameter '", name, "' to swap"));
  }
  // The loader gave the store the only reference to this memory, and no
  // model reads it yet: permuting it in place keeps the charged bytes exact.
  const torch::Tensor& stored = dense != nullptr ? *dense : fp8->codes;
  if (stored.dim() < 1 || stored.size(0) % 2 != 0 || !stored.is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat("parameter '", name, "' with shape [",
                                                   absl::StrJoin(stored.sizes(), ", "),
                                                   "] has no two contiguous row halves to swap"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(status_of("swapping '" + std::string(name) + "'", [&]() -> absl::Status {
    torch::NoGradGuard no_grad;
    const int64_t half = stored.size(0) / 2;
    torch::Tensor bounce;
    for (int64_t first = 0; first < half; first += kRowsPerChunk) {
      const int64_t n = std::min(kRowsPerChunk, half - first);
      torch::Tensor a = stored.narrow(0, first, n), b = stored.narrow(0, half + first, n);
      if (!bounce.defined() || bounce.size(0) != n) bounce = torch::empty_like(a);
      bounce.copy_(a);
      a.copy_(b);
      b.copy_(bounce);
    }
    return absl::OkStatus();
  }));
  return weights->rename(name, to);
}

absl::Status to_diffusers_layout(const FluxConfig& config, WeightStore* weights) {
  for (const auto& [from, to] : flux_swapped_halves(weights->names())) {
    DIFFUSIOND_RETURN_IF_ERROR(swap_row_halves(weights, from, to));
  }
  for (const FusedSplit& split : flux_fused_splits(config, weights->names())) {
    DIFFUSIOND_RETURN_IF_ERROR(weights->split_rows(split.fused, split.parts));
  }
  return absl::OkStatus();
}

}  // namespace diffusiond
