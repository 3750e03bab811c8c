// Reading a pipeline's scheduler_config.json into ScheduleOptions: diffusers'
// FlowMatchEulerDiscreteScheduler (the static shift, or the
// resolution-dependent shift and its bounds) or UniPCMultistepScheduler on
// flow sigmas (its flow_shift and order). Settings that would
// change the arithmetic in ways the loop does not implement are refused,
// not ignored.
#ifndef DIFFUSIOND_CORE_DENOISE_SCHEDULER_CONFIG_H_
#define DIFFUSIOND_CORE_DENOISE_SCHEDULER_CONFIG_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/denoise/flow_match_schedule.h"

namespace diffusiond {

// Returns `defaults` with the scheduler's fields replaced by the config's
// (shift, use_dynamic_shifting, base_shift, max_shift, base_image_seq_len,
// max_image_seq_len, shift_terminal; for UniPC the solver, flow_shift and
// solver_order): a field it leaves out or sets to null takes upstream's
// class default (shift 1, no dynamic shift, 0.5 / 1.15 over 256 / 4096
// tokens, no shift_terminal), as diffusers' from_config gives it. The
// fields that are not the scheduler's (steps, float64_linspace, mu) stay
// as in `defaults`. INVALID_ARGUMENT naming `path` for malformed JSON, another
// scheduler class, out-of-range values, or unsupported settings
// (Karras/exponential/beta sigmas, invert_sigmas, stochastic sampling, a
// linear time shift, num_train_timesteps other than 1000).
absl::StatusOr<ScheduleOptions> parse_scheduler_config(absl::string_view json, absl::string_view path,
                                                       const ScheduleOptions& defaults);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_DENOISE_SCHEDULER_CONFIG_H_
