// The flow-matching schedules: diffusers' FlowMatchEulerDiscreteScheduler
// as the Z-Image and FLUX.1 pipelines drive it (sigmas from 1 down to 1/N,
// shifted statically or by resolution, with a terminal 0; the scheduler
// timestep is sigma × 1000, float32 as upstream's), and the flow sigmas of
// UniPCMultistepScheduler as Wan 2.x runs it (FlowSolver::kUniPc). What time
// a model is given is the model's convention (flow_convention.h).
#ifndef DIFFUSIOND_CORE_DENOISE_FLOW_MATCH_SCHEDULE_H_
#define DIFFUSIOND_CORE_DENOISE_FLOW_MATCH_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"

namespace diffusiond {

// How the loop integrates a step (denoise_loop.h).
enum class FlowSolver {
  kEuler,  // FlowMatchEulerDiscreteScheduler: latents += (σ[i+1] − σ[i])·v
  // UniPCMultistepScheduler, flow_prediction with use_flow_sigmas, bh2
  // (unipc_multistep.h): σ = linspace(1, 1/1000, N + 1)[:-1] in float64,
  // shifted statically, the first nudged below 1 by 1e-6; the timesteps
  // are σ × 1000 truncated to integers.
  kUniPc,
};

struct ScheduleOptions {
  FlowSolver solver = FlowSolver::kEuler;
  int solver_order = 2;  // kUniPc: 1 or 2
  int steps = 8;
  // How the unshifted sigmas linspace(1, 1/N, N) are computed, which
  // decides their last bits: Z-Image's pipeline uses torch.linspace in
  // float32, FLUX's np.linspace in float64 rounded to float32.
  bool float64_linspace = false;
  // Static shift: sigma' = shift·s / (1 + (shift − 1)·s). Z-Image-Turbo's
  // and FLUX.1-schnell's schedulers use 3.0 and 1.0. Ignored when
  // `dynamic_shift` is set.
  double shift = 3.0;
  // Resolution-dependent shift (upstream's use_dynamic_shifting): mu grows
  // linearly with the image token count from base_shift at 256 tokens to
  // max_shift at 4096, and sigma' = e^mu / (e^mu + 1/s − 1).
  bool dynamic_shift = false;
  int64_t image_seq_len = 0;  // (H/2)·(W/2) latent tokens; for dynamic_shift
  double base_shift = 0.5, max_shift = 1.15;
  int64_t base_seq_len = 256, max_seq_len = 4096;
  // Upstream's shift_terminal: when in (0, 1), the shifted sigmas are
  // stretched so the last one equals it, sigma'' = 1 − (1 − sigma') ·
  // (1 − shift_terminal) / (1 − sigma'_last) (Qwen-Image uses 0.02). 0: off.
  double shift_terminal = 0.0;
  // A fixed mu for dynamic_shift in place of the resolution's (Krea 2's
  // distilled checkpoint: its pipeline's is_distilled fixes 1.15, whatever
  // image_seq_len). Empty: mu from image_seq_len. Ignored without
  // dynamic_shift.
  std::optional<double> mu;
  // Explicit sigmas, used as given (no shift applied): strictly decreasing,
  // in (0, 1]. Overrides steps and shift.
  std::vector<float> sigmas;
  // Upstream __call__'s `sigmas` (kEuler): in place of linspace(1, 1/N, N),
  // N their count, then shifted (statically, dynamically, to the terminal)
  // as that linspace would be, as set_timesteps(sigmas=...) shifts them.
  // Strictly decreasing, in (0, 1]. Ignored when `sigmas` is given.
  std::vector<float> base_sigmas;
};

struct Schedule {
  std::vector<float> sigmas;     // steps + 1 values, the last 0
  std::vector<float> timesteps;  // steps values, sigma × 1000
  int steps() const { return static_cast<int>(timesteps.size()); }
};

// diffusers' FlowMatchEulerDiscreteScheduler's class defaults: shift 1, no
// dynamic shift, base_shift 0.5 / max_shift 1.15 over 256 / 4096 tokens, no
// shift_terminal; what from_config gives a field its config leaves out.
// (ScheduleOptions' own shift, 3, is Z-Image-Turbo's.)
ScheduleOptions flow_match_euler_defaults();

// Upstream's get_timesteps for img2img and inpainting: of `steps`, the run
// starts at t_start = int(steps − min(steps·strength, steps)), in double as
// Python computes it (0.56 of 25 steps starts at 10, not 11).
int strength_first_step(int steps, double strength);

// INVALID_ARGUMENT for steps < 1, a non-positive shift, a shift_terminal
// outside [0, 1), or explicit sigmas that are not strictly decreasing in
// (0, 1].
absl::StatusOr<Schedule> flow_match_schedule(const ScheduleOptions& options);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_DENOISE_FLOW_MATCH_SCHEDULE_H_
