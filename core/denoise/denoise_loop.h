// The flow-matching loop (Euler, or UniPC where the schedule asks for it)
// with classifier-free guidance, per-step progress and cancellation between
// steps. Model-agnostic: the model is reached through a FlowPredictor and
// its FlowConvention.
#ifndef DIFFUSIOND_CORE_DENOISE_DENOISE_LOOP_H_
#define DIFFUSIOND_CORE_DENOISE_DENOISE_LOOP_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/denoise/flow_convention.h"
#include "core/denoise/flow_match_schedule.h"
#include "core/denoise/seeded_generator.h"
#include "core/denoise/unipc_multistep.h"
#include "core/util/cancellation.h"
#include "core/util/clock.h"

namespace diffusiond {

// Latents are [C, spatial...]: [C, H, W] for images, [C, F, H, W] for
// video; the model's LatentLayout says which.
//
// One model call: latents [C, H, W] float32 and the model time t; returns
// the model's raw outputs [C, H, W] float32 (its FlowConvention maps them
// to velocities) for the positive conditioning and, when `with_negative`,
// for the negative one.
struct FlowPrediction {
  torch::Tensor positive;
  torch::Tensor negative;  // undefined without guidance
};
using FlowPredictor =
    std::function<absl::StatusOr<FlowPrediction>(const torch::Tensor& latents, float t, bool with_negative)>;

// A run that starts from an image's latents (img2img, inpainting), as
// diffusers' *Img2ImgPipeline and *InpaintPipeline drive the flow-matching
// scheduler: the schedule is computed for every step, the run begins at
// `first_step` (get_timesteps' t_start, set_begin_index), and the start is
// scale_noise(clean, σ[first_step], noise) = σ·noise + (1 − σ)·clean.
struct ImageStart {
  torch::Tensor clean;  // the image's latents [C, ...] (pipeline space)
  torch::Tensor noise;  // the same shape
  int first_step = 0;   // in [0, steps)
  // Inpainting: [1, spatial...] (the latents' spatial sizes), 1 where the
  // image is repainted and 0 where it is kept. After each step the kept part
  // is reset to the clean latents noised to the next step's sigma (none
  // after the last step): latents = (1 − mask)·scale_noise(clean, σ[i + 1],
  // noise) + mask·latents. Undefined: img2img.
  torch::Tensor mask;
};

struct DenoiseRequest {
  // Initial latents [C, H, W] (float, converted to float32). When undefined,
  // noise of `latent_shape` is drawn from `seed`. Ignored with from_image.
  torch::Tensor initial_latents;
  std::vector<int64_t> latent_shape;  // [C, H, W]
  uint64_t seed = 0;
  // The classifier-free guidance scale s: v = v_neg + s·(v_pos − v_neg).
  // s <= 1 runs without it (one model call per step). Upstream Z-Image's
  // `guidance_scale` g is this s − 1 (it writes pos + g·(pos − neg)), and
  // FLUX's `true_cfg_scale` is s. (FLUX.1-dev's distilled guidance is
  // conditioning, not this.) A segment may run at its own scale
  // (DenoiseRun::run).
  double guidance_scale = 1.0;
  bool has_negative = false;  // guidance needs negative conditioning
  ScheduleOptions schedule;
  std::optional<ImageStart> from_image;
};

struct StepEvent {
  // 1-based: steps done, of the steps this run makes (an img2img run from
  // ImageStart::first_step counts from there, as upstream's progress bar).
  int step = 0;
  int steps = 0;
  float sigma = 0;  // sigma the step started from
  absl::Duration step_time;
  int segment = 0;  // which segment ran it (DenoiseRun::run), 0 the first
};

struct DenoiseOptions {
  std::function<void(const StepEvent&)> on_step;  // optional
  // Checked between steps (and, through the engine's scope, between a
  // forward's blocks); default: never cancelled.
  CancellationToken cancel;
  Clock* clock = nullptr;                         // default real_clock()
  bool keep_history = false;  // fill DenoiseResult::history (for tests)
};

struct DenoiseResult {
  torch::Tensor latents;               // [C, H, W] float32
  std::vector<torch::Tensor> history;  // latents after each step, if kept
  Schedule schedule;
};

// One loop over a schedule, run in segments: each segment runs the next
// steps with its own predictor and guidance scale, and the latents and the
// solver's history carry from one segment to the next, as upstream's one
// scheduler carries them across Wan 2.2's two experts. So whoever runs the
// loop may ready each segment's model only when its turn comes (and let the
// previous one go first). Not thread-safe; movable.
class DenoiseRun {
 public:
  // Draws or takes the initial latents and computes the schedule.
  // INVALID_ARGUMENT for a bad request (shape, schedule).
  static absl::StatusOr<DenoiseRun> start(const FlowConvention& convention, const DenoiseRequest& request);

  const Schedule& schedule() const { return result_.schedule; }
  // The schedule's index of the next step: ImageStart::first_step before
  // the first.
  int steps_done() const { return next_; }
  bool done() const { return next_ == schedule().steps(); }

  // Runs steps [steps_done(), end) with `predict` at `guidance_scale`,
  // reporting them as segment `segment`. INVALID_ARGUMENT for an `end`
  // outside (steps_done(), steps], or guidance without a negative (or on
  // latents the convention's rescale cannot split); the token's reason
  // between steps once options.cancel fires; the predictor's errors as
  // they come (the run then stays where it was).
  absl::Status run(const FlowPredictor& predict, double guidance_scale, int end, int segment,
                   const DenoiseOptions& options);

  // The final latents (and the history kept). REQUIRES: done().
  DenoiseResult finish() &&;

 private:
  DenoiseRun(const FlowConvention& convention, const DenoiseRequest& request, torch::Tensor latents,
             Schedule schedule, int first_step);

  FlowConvention convention_;
  bool has_negative_ = false;
  torch::Tensor latents_;
  std::optional<ImageStart> inpaint_;  // with a mask: blended after each step
  int first_step_ = 0;
  DenoiseResult result_;
  std::optional<UniPcSolver> unipc_;
  int next_ = 0;  // the next step to run
};

// The step a segment that takes over below scheduler timestep `boundary`
// starts at: the first step at or after `from` whose timestep is below it
// (upstream's `t < boundary_ratio * num_train_timesteps` picks the later
// expert), or schedule.steps() when none is.
int first_step_below(const Schedule& schedule, float boundary, int from);

// Runs the whole loop with one predictor: each step gives `predict` the time
// `convention` maps the step's timestep to, and integrates
// convention.velocity_sign × output.
// CANCELLED between steps when `cancelled` reads true; INVALID_ARGUMENT for
// a bad request; errors of the predictor as they come.
absl::StatusOr<DenoiseResult> denoise(const FlowPredictor& predict, const FlowConvention& convention,
                                      const DenoiseRequest& request, const DenoiseOptions& options = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_DENOISE_DENOISE_LOOP_H_
