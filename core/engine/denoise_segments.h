// The checks of a Denoise's later segments (EngineDenoiseRequest), made
// before its first step: so that a two-expert run with a wrong second
// model or boundaries out of order is refused before any noise is drawn,
// not at the switch.
#ifndef DIFFUSIOND_CORE_ENGINE_DENOISE_SEGMENTS_H_
#define DIFFUSIOND_CORE_ENGINE_DENOISE_SEGMENTS_H_

#include "absl/status/status.h"
#include "core/engine/engine_api.h"
#include "core/models/diffusion_model.h"

namespace diffusiond {

// OK when every later segment of `request` names a model of `first`'s
// architecture (described through `engine`, not loaded) with boundaries
// decreasing in (0, 1] and guidance scales >= 0; INVALID_ARGUMENT naming
// the segment otherwise, or inspect()'s errors for its model.
absl::Status check_later_segments(EngineApi& engine, const EngineDenoiseRequest& request,
                                  const DiffusionModel& first);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_DENOISE_SEGMENTS_H_
