#include "core/engine/denoise_segments.h"

#include "absl/strings/str_cat.h"
#include "core/engine/describe_model.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::Status check_later_segments(EngineApi& engine, const EngineDenoiseRequest& request,
                                  const DiffusionModel& first) {
  double above = 1;
  for (size_t k = 0; k < request.later_segments.size(); ++k) {
    const DenoiseSegment& s = request.later_segments[k];
    if (s.model.empty()) return absl::InvalidArgumentError(absl::StrCat("segment ", k + 1, " names no model"));
    const bool first_later = k == 0;
    if (!(s.boundary_ratio > 0 && (first_later ? s.boundary_ratio <= above : s.boundary_ratio < above))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment ", k + 1, " (\"", bounded(s.model), "\") has boundary_ratio ", s.boundary_ratio,
          first_later ? ", expected one in (0, 1]"
                      : absl::StrCat(", expected one in (0, ", above, "): below the segment before it")));
    }
    above = s.boundary_ratio;
    if (!(s.guidance_scale >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("segment ", k + 1, " has guidance_scale ", s.guidance_scale, ", expected >= 0"));
    }
    // Described, not loaded.
    ModelLoadRequest load;
    load.path = s.model;
    load.fp8 = s.fp8;
    load.compute_dtype = s.compute_dtype;
    DIFFUSIOND_ASSIGN_OR_RETURN(const ModelInfo info, describe_model(engine, load));
    if (info.architecture != first.architecture()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment ", k + 1, "'s model \"", bounded(s.model), "\" is ", info.architecture, ", but model \"",
          bounded(request.model.id()), "\" is ", first.architecture(), ": every segment must be one architecture"));
    }
  }
  return absl::OkStatus();
}

}  // namespace diffusiond
