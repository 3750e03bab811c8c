// FLUX's sigma schedule, as FluxPipeline drives FlowMatchEulerDiscreteScheduler:
// base sigmas linspace(1, 1/N, N) (float64, then float32), shifted either by
// the resolution-dependent mu (use_dynamic_shifting, FLUX.1-dev) or by a
// static shift (FLUX.1-schnell: 1.0), with a terminal 0. The model's time is
// sigma itself (timestep / 1000), not 1 - sigma.
//
// Not here: the Euler loop (core/denoise).
#ifndef DIFFUSIOND_CORE_MODELS_FLUX_FLUX_SCHEDULE_H_
#define DIFFUSIOND_CORE_MODELS_FLUX_FLUX_SCHEDULE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/denoise/flow_match_schedule.h"

namespace diffusiond {

// The scheduler_config.json fields FLUX uses; defaults are
// FlowMatchEulerDiscreteScheduler's (static shift 1.0).
struct FluxSchedulerConfig {
  bool use_dynamic_shifting = false;
  double shift = 1.0;
  double base_shift = 0.5, max_shift = 1.15;
  int64_t base_image_seq_len = 256, max_image_seq_len = 4096;
};

// Parses a FlowMatchEulerDiscreteScheduler scheduler_config.json.
// INVALID_ARGUMENT naming a field of the wrong type, or a setting this
// schedule does not implement (karras / exponential / beta sigmas, a
// shift_terminal, a non-exponential time_shift_type, num_train_timesteps
// other than 1000); `what` prefixes messages.
absl::StatusOr<FluxSchedulerConfig> parse_flux_scheduler_config(absl::string_view json, absl::string_view what);

// mu = image_seq_len * m + b, the line through (base_image_seq_len,
// base_shift) and (max_image_seq_len, max_shift), in float64 as upstream.
double flux_mu(const FluxSchedulerConfig& config, int64_t image_seq_len);

// The schedule for `steps` steps over `image_seq_len` packed tokens
// ((H/2)(W/2) for a latent H x W). INVALID_ARGUMENT for steps outside
// [1, 1000] or a non-positive static shift.
absl::StatusOr<Schedule> flux_schedule(const FluxSchedulerConfig& config, int steps, int64_t image_seq_len);

// The time the model is given at `step`: float32(timesteps[step]) / 1000.
float flux_model_time(const Schedule& schedule, int step);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FLUX_FLUX_SCHEDULE_H_
