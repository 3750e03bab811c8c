#include "core/denoise/denoise_loop.h"

#include <ATen/CPUGeneratorImpl.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/denoise/unipc_multistep.h"
#include "core/util/status_macros.h"

namespace diffusiond {

namespace {

// Per-token L2 norms of latents [C, ..., H, W] whose tokens are all channels
// of one patch x patch block: [1, F, H/patch, 1, W/patch, 1] over the
// [C, F, H/patch, patch, W/patch, patch] view (F the middle axes' product).
torch::Tensor patch_norms(const torch::Tensor& x, int64_t patch) {
  const int64_t c = x.size(0), h = x.size(-2), w = x.size(-1), f = x.numel() / (c * h * w);
  return x.reshape({c, f, h / patch, patch, w / patch, patch}).square().sum({0, 3, 5}, true).sqrt();
}

// Qwen-Image's true CFG: comb = neg + s·(pos − neg), rescaled per token to
// pos's norm (flow_convention.h).
torch::Tensor norm_rescaled_guidance(const torch::Tensor& pos, const torch::Tensor& neg, float scale, int64_t patch) {
  const torch::Tensor comb = neg + scale * (pos - neg);
  const int64_t c = pos.size(0), h = pos.size(-2), w = pos.size(-1), f = pos.numel() / (c * h * w);
  const torch::Tensor factor = patch_norms(pos, patch) / patch_norms(comb, patch);
  return (comb.reshape({c, f, h / patch, patch, w / patch, patch}) * factor).reshape(pos.sizes());
}

}  // namespace

torch::Tensor seeded_noise(const std::vector<int64_t>& shape, uint64_t seed) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  return torch::randn(shape, generator, torch::TensorOptions().dtype(torch::kFloat32));
}

absl::StatusOr<DenoiseResult> denoise(const FlowPredictor& predict, const FlowConvention& convention,
                                      const DenoiseRequest& request, const DenoiseOptions& options) {
  Clock* clock = options.clock != nullptr ? options.clock : real_clock();
  const double scale_2 = request.guidance_scale_2 > 0 ? request.guidance_scale_2 : request.guidance_scale;
  for (double scale : {request.guidance_scale, request.expert_boundary > 0 ? scale_2 : 1.0}) {
    if (scale > 1.0 && !request.has_negative) {
      return absl::InvalidArgumentError(absl::StrCat("guidance scale ", scale, " needs negative conditioning"));
    }
  }
  if (request.expert_boundary > 0 && !options.second_expert) {
    return absl::InvalidArgumentError("an expert boundary needs a second expert");
  }
  torch::Tensor latents;
  if (request.initial_latents.defined()) {
    // The rank is the model's to check (its LatentLayout): images are
    // [C, H, W], video [C, F, H, W].
    if (request.initial_latents.dim() < 2 || !request.initial_latents.is_floating_point()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "initial latents have shape [", absl::StrJoin(request.initial_latents.sizes(), ", "),
          "], expected a float [C, ...] with at least one spatial dimension"));
    }
    latents = request.initial_latents.to(torch::kFloat32).clone();
  } else {
    if (request.latent_shape.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "latent shape has ", request.latent_shape.size(), " dimensions, expected [C, ...] with at least one "
          "spatial dimension"));
    }
    for (int64_t d : request.latent_shape) {
      if (d <= 0) return absl::InvalidArgumentError("latent shape must be positive");
    }
    latents = seeded_noise(request.latent_shape, request.seed);
  }
  const int64_t patch = convention.guidance_norm_patch;
  const bool any_guided = request.guidance_scale > 1.0 || (request.expert_boundary > 0 && scale_2 > 1.0);
  if (any_guided && patch > 0 && (latents.dim() < 3 || latents.size(-2) % patch != 0 || latents.size(-1) % patch != 0)) {
    return absl::InvalidArgumentError(absl::StrCat("latents [", absl::StrJoin(latents.sizes(), ", "),
                                                   "] do not split into the ", patch, "x", patch,
                                                   " patches the model's guidance rescale works on"));
  }
  DenoiseResult result;
  DIFFUSIOND_ASSIGN_OR_RETURN(result.schedule, flow_match_schedule(request.schedule));
  const Schedule& s = result.schedule;
  std::optional<UniPcSolver> unipc;
  if (request.schedule.solver == FlowSolver::kUniPc) unipc.emplace(s, request.schedule.solver_order);
  const FlowPredictor* model = &predict;
  FlowPredictor second;
  int expert = 0;
  for (int i = 0; i < s.steps(); ++i) {
    if (options.cancel.cancelled()) {
      const absl::Status why = options.cancel.status();
      return absl::Status(why.code(), absl::StrCat("denoise cancelled after ", i, " of ", s.steps(), " steps: ",
                                                   why.message()));
    }
    const absl::Time start = clock->now();
    // Upstream compares the scheduler's (integer) timestep with the boundary.
    if (expert == 0 && request.expert_boundary > 0 && s.timesteps[i] < request.expert_boundary) {
      DIFFUSIOND_ASSIGN_OR_RETURN(second, options.second_expert());
      model = &second;
      expert = 1;
    }
    const double scale = expert == 0 ? request.guidance_scale : scale_2;
    const bool guided = scale > 1.0;
    // Upstream's g: pred = pos + g·(pos − neg).
    const float g = static_cast<float>(scale - 1.0);
    DIFFUSIOND_ASSIGN_OR_RETURN(FlowPrediction p,
                                (*model)(latents, model_time(convention.time, s.timesteps[i]), guided));
    torch::Tensor pred = p.positive.to(torch::kFloat32);
    if (guided && patch > 0) {
      pred = norm_rescaled_guidance(pred, p.negative.to(torch::kFloat32), static_cast<float>(scale), patch);
    } else if (guided) {
      pred = pred + g * (pred - p.negative.to(torch::kFloat32));
    }
    const torch::Tensor velocity = convention.velocity_sign == 1.0f ? pred : convention.velocity_sign * pred;
    latents =
        unipc.has_value() ? unipc->step(i, latents, velocity) : latents + (s.sigmas[i + 1] - s.sigmas[i]) * velocity;
    if (options.keep_history) result.history.push_back(latents);
    if (options.on_step) {
      StepEvent event;
      event.step = i + 1;
      event.steps = s.steps();
      event.sigma = s.sigmas[i];
      event.step_time = clock->now() - start;
      event.expert = expert;
      options.on_step(event);
    }
  }
  result.latents = latents;
  return result;
}

}  // namespace diffusiond
