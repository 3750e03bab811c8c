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

struct DenoiseRequest {
  // Initial latents [C, H, W] (float, converted to float32). When undefined,
  // noise of `latent_shape` is drawn from `seed`.
  torch::Tensor initial_latents;
  std::vector<int64_t> latent_shape;  // [C, H, W]
  uint64_t seed = 0;
  // The classifier-free guidance scale s: v = v_neg + s·(v_pos − v_neg).
  // s <= 1 runs without it (one model call per step). Upstream Z-Image's
  // `guidance_scale` g is this s − 1 (it writes pos + g·(pos − neg)), and
  // FLUX's `true_cfg_scale` is s. (FLUX.1-dev's distilled guidance is
  // conditioning, not this.)
  double guidance_scale = 1.0;
  bool has_negative = false;  // guidance needs negative conditioning
  ScheduleOptions schedule;
  // A second expert (Wan 2.2's low-noise transformer): the steps whose
  // scheduler timestep is below `expert_boundary` (boundary_ratio × 1000)
  // run the predictor DenoiseOptions::second_expert readies, guided by
  // `guidance_scale_2` (0: guidance_scale). 0: one model runs every step.
  float expert_boundary = 0;
  double guidance_scale_2 = 0;
};

struct StepEvent {
  int step = 0;  // 1-based: steps done
  int steps = 0;
  float sigma = 0;  // sigma the step started from
  absl::Duration step_time;
  int expert = 0;  // which model ran it: 0 the first, 1 the second expert
  // Set by the engine on the first step of each expert: the models evicted
  // to make room for it, and whether it was loaded for this call (the
  // second expert when not cached).
  std::vector<std::string> evicted;
  bool loaded = false;
};

struct DenoiseOptions {
  std::function<void(const StepEvent&)> on_step;  // optional
  // Checked between steps (and, through the engine's scope, between a
  // forward's blocks); default: never cancelled.
  CancellationToken cancel;
  Clock* clock = nullptr;                         // default real_clock()
  bool keep_history = false;  // fill DenoiseResult::history (for tests)
  // With DenoiseRequest::expert_boundary: called once, before the first
  // step below it, to ready the second expert (the first model's predictor
  // is not called again); returns its predictor, of the same
  // FlowConvention. Its error ends the loop.
  std::function<absl::StatusOr<FlowPredictor>()> second_expert;
};

struct DenoiseResult {
  torch::Tensor latents;               // [C, H, W] float32
  std::vector<torch::Tensor> history;  // latents after each step, if kept
  Schedule schedule;
};

// Draws the initial noise: torch.randn(shape) from a CPU generator seeded
// with `seed` — the same values as PyTorch's
// torch.randn(shape, generator=torch.Generator().manual_seed(seed)).
torch::Tensor seeded_noise(const std::vector<int64_t>& shape, uint64_t seed);

// Runs the loop: each step gives `predict` the time `convention` maps the
// step's timestep to, and integrates convention.velocity_sign × output.
// CANCELLED between steps when `cancelled` reads true; INVALID_ARGUMENT for
// a bad request; errors of the predictor as they come.
absl::StatusOr<DenoiseResult> denoise(const FlowPredictor& predict, const FlowConvention& convention,
                                      const DenoiseRequest& request, const DenoiseOptions& options = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_DENOISE_DENOISE_LOOP_H_
