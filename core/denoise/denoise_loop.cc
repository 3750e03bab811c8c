#include "core/denoise/denoise_loop.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// OK when `from`'s tensors are float, clean and noise of one shape [C,
// spatial...], and the mask (if any) [1, spatial...].
absl::Status check_image_start(const ImageStart& from) {
  const auto shape = [](const torch::Tensor& t) {
    return t.defined() ? absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]") : std::string("none");
  };
  if (!from.clean.defined() || !from.noise.defined() || from.clean.dim() < 2 || !from.clean.is_floating_point() ||
      !from.noise.is_floating_point() || from.clean.sizes() != from.noise.sizes()) {
    return absl::InvalidArgumentError(absl::StrCat("an image's run needs float clean latents and noise of one shape "
                                                   "[C, ...], got ", shape(from.clean), " and ", shape(from.noise)));
  }
  if (from.mask.defined()) {
    std::vector<int64_t> expected = from.clean.sizes().vec();
    expected[0] = 1;
    if (from.mask.sizes().vec() != expected || !from.mask.is_floating_point()) {
      return absl::InvalidArgumentError(absl::StrCat("an inpainting mask must be float [", absl::StrJoin(expected, ", "),
                                                     "], got ", shape(from.mask)));
    }
  }
  return absl::OkStatus();
}

// Upstream's FlowMatchEulerDiscreteScheduler.scale_noise at `sigma`, in
// float32 and in its order of operations.
torch::Tensor scale_noise(const ImageStart& from, float sigma) {
  return sigma * from.noise.to(torch::kFloat32) + (1.0f - sigma) * from.clean.to(torch::kFloat32);
}

}  // namespace

absl::StatusOr<DenoiseRun> DenoiseRun::start(const FlowConvention& convention, const DenoiseRequest& request) {
  if (request.from_image.has_value()) {
    const ImageStart& from = *request.from_image;
    DIFFUSIOND_RETURN_IF_ERROR(check_image_start(from));
    DIFFUSIOND_ASSIGN_OR_RETURN(Schedule schedule, flow_match_schedule(request.schedule));
    if (from.first_step < 0 || from.first_step >= schedule.steps()) {
      return absl::InvalidArgumentError(absl::StrCat("an image's run must start at a step of 0 to ",
                                                     schedule.steps() - 1, ", got ", from.first_step));
    }
    torch::Tensor latents = scale_noise(from, schedule.sigmas[from.first_step]);
    return DenoiseRun(convention, request, std::move(latents), std::move(schedule), from.first_step);
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
  DIFFUSIOND_ASSIGN_OR_RETURN(Schedule schedule, flow_match_schedule(request.schedule));
  return DenoiseRun(convention, request, std::move(latents), std::move(schedule), 0);
}

DenoiseRun::DenoiseRun(const FlowConvention& convention, const DenoiseRequest& request, torch::Tensor latents,
                       Schedule schedule, int first_step)
    : convention_(convention),
      has_negative_(request.has_negative),
      latents_(std::move(latents)),
      first_step_(first_step),
      next_(first_step) {
  result_.schedule = std::move(schedule);
  if (request.schedule.solver == FlowSolver::kUniPc) unipc_.emplace(result_.schedule, request.schedule.solver_order);
  if (request.from_image.has_value() && request.from_image->mask.defined()) {
    inpaint_ = request.from_image;
    inpaint_->clean = inpaint_->clean.to(torch::kFloat32);
    inpaint_->noise = inpaint_->noise.to(torch::kFloat32);
    inpaint_->mask = inpaint_->mask.to(torch::kFloat32);
  }
}

absl::Status DenoiseRun::run(const FlowPredictor& predict, double guidance_scale, int end, int segment,
                             const DenoiseOptions& options) {
  const Schedule& s = result_.schedule;
  if (end <= next_ || end > s.steps()) {
    return absl::InvalidArgumentError(absl::StrCat("a segment must end after step ", next_, " and by step ",
                                                   s.steps(), ", got ", end));
  }
  const bool guided = guidance_scale > 1.0;
  if (guided && !has_negative_) {
    return absl::InvalidArgumentError(absl::StrCat("guidance scale ", guidance_scale, " needs negative conditioning"));
  }
  const int64_t patch = convention_.guidance_norm_patch;
  if (guided && patch > 0 &&
      (latents_.dim() < 3 || latents_.size(-2) % patch != 0 || latents_.size(-1) % patch != 0)) {
    return absl::InvalidArgumentError(absl::StrCat("latents [", absl::StrJoin(latents_.sizes(), ", "),
                                                   "] do not split into the ", patch, "x", patch,
                                                   " patches the model's guidance rescale works on"));
  }
  Clock* clock = options.clock != nullptr ? options.clock : real_clock();
  // Upstream's g: pred = pos + g·(pos − neg).
  const float g = static_cast<float>(guidance_scale - 1.0);
  for (; next_ < end; ++next_) {
    const int i = next_;
    if (options.cancel.cancelled()) {
      const absl::Status why = options.cancel.status();
      return absl::Status(why.code(), absl::StrCat("denoise cancelled after ", i, " of ", s.steps(), " steps: ",
                                                   why.message()));
    }
    const absl::Time start = clock->now();
    DIFFUSIOND_ASSIGN_OR_RETURN(FlowPrediction p,
                                predict(latents_, model_time(convention_.time, s.timesteps[i]), guided));
    torch::Tensor pred = p.positive.to(torch::kFloat32);
    if (guided && patch > 0) {
      pred = norm_rescaled_guidance(pred, p.negative.to(torch::kFloat32), static_cast<float>(guidance_scale), patch);
    } else if (guided) {
      pred = pred + g * (pred - p.negative.to(torch::kFloat32));
    }
    const torch::Tensor velocity = convention_.velocity_sign == 1.0f ? pred : convention_.velocity_sign * pred;
    latents_ = unipc_.has_value() ? unipc_->step(i, latents_, velocity)
                                  : latents_ + (s.sigmas[i + 1] - s.sigmas[i]) * velocity;
    if (inpaint_.has_value()) {
      // Upstream blends with timesteps[i + 1]'s noise level, and with the
      // clean latents themselves after the last step.
      const torch::Tensor kept = i + 1 < s.steps() ? scale_noise(*inpaint_, s.sigmas[i + 1]) : inpaint_->clean;
      latents_ = (1 - inpaint_->mask) * kept + inpaint_->mask * latents_;
    }
    if (options.keep_history) result_.history.push_back(latents_);
    if (options.on_step) {
      StepEvent event;
      event.step = i + 1 - first_step_;
      event.steps = s.steps() - first_step_;
      event.sigma = s.sigmas[i];
      event.step_time = clock->now() - start;
      event.segment = segment;
      options.on_step(event);
    }
  }
  return absl::OkStatus();
}

DenoiseResult DenoiseRun::finish() && {
  result_.latents = std::move(latents_);
  return std::move(result_);
}

int first_step_below(const Schedule& schedule, float boundary, int from) {
  int i = from;
  while (i < schedule.steps() && !(schedule.timesteps[i] < boundary)) ++i;
  return i;
}

absl::StatusOr<DenoiseResult> denoise(const FlowPredictor& predict, const FlowConvention& convention,
                                      const DenoiseRequest& request, const DenoiseOptions& options) {
  DIFFUSIOND_ASSIGN_OR_RETURN(DenoiseRun run, DenoiseRun::start(convention, request));
  DIFFUSIOND_RETURN_IF_ERROR(run.run(predict, request.guidance_scale, run.schedule().steps(), 0, options));
  return std::move(run).finish();
}

}  // namespace diffusiond
