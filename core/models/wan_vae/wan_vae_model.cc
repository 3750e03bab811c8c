#include "core/models/wan_vae/wan_vae_model.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/param_table.h"
#include "core/models/wan_vae/wan_vae_network.h"
#include "core/models/wan_vae/wan_vae_params.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

std::string shape_text(const torch::Tensor& t) { return t.defined() ? absl::StrJoin(t.sizes(), ", ") : ""; }

// The statistics as upstream builds them: torch.tensor(list) in float32.
torch::Tensor float_tensor(const std::vector<double>& values) {
  std::vector<float> f(values.begin(), values.end());
  return torch::tensor(f, torch::kFloat32);
}

}  // namespace

absl::string_view wan_vae_architecture(WanVaeClass config_class) {
  return config_class == WanVaeClass::kWan ? kWanVaeArchitecture : kQwenImageVaeArchitecture;
}

absl::StatusOr<std::unique_ptr<WanVaeModel>> WanVaeModel::create(const WanVaeConfig& config,
                                                                 std::unique_ptr<WeightStore> weights) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  DIFFUSIOND_RETURN_IF_ERROR(
      check_weights_match_table(*weights, wan_vae_parameter_table(config), wan_vae_class_name(config.config_class)));
  return std::unique_ptr<WanVaeModel>(new WanVaeModel(config, std::move(weights)));
}

WanVaeModel::WanVaeModel(const WanVaeConfig& config, std::unique_ptr<WeightStore> weights)
    : ImageDecoder(std::move(weights)), config_(config) {}

torch::Tensor WanVaeModel::latents_mean(torch::ScalarType dtype, torch::Device device) const {
  return float_tensor(config_.latents_mean).view({1, config_.z_dim, 1, 1, 1}).to(device, dtype);
}

torch::Tensor WanVaeModel::latents_inv_std(torch::ScalarType dtype, torch::Device device) const {
  return torch::reciprocal(float_tensor(config_.latents_std)).view({1, config_.z_dim, 1, 1, 1}).to(device, dtype);
}

absl::Status WanVaeModel::decode_frames(const torch::Tensor& latents, const std::optional<WanVaeTiling>& tiling,
                                        const WanVaeFrameSink& sink) const {
  if (!latents.defined() || latents.dim() != 5 || latents.size(0) < 1 || latents.size(1) != config_.z_dim ||
      latents.size(2) < 1 || latents.size(3) < 1 || latents.size(4) < 1 || !latents.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat("the latents have shape [", shape_text(latents),
                                                   "], but the VAE expects a float [B, ", config_.z_dim,
                                                   ", frames, h, w]"));
  }
  const int64_t f = config_.spatial_factor();
  if (tiling.has_value()) DIFFUSIOND_RETURN_IF_ERROR(tiling->validate(f));
  return status_of("the VAE decode", [&]() -> absl::Status {
    torch::NoGradGuard no_grad;
    // On a placement's device the latents go there and the frames come back.
    const torch::Device device = forward_device(), home = latents.device();
    const torch::ScalarType dtype = compute_dtype(*this);
    // Upstream's order: cast, divide by the float32 reciprocal, add the mean.
    const torch::Tensor z =
        latents.to(device, dtype).div(latents_inv_std(dtype, device)).add(latents_mean(dtype, device));
    const WanVaeParamFn param = [this](const std::string& name) { return this->param(name); };
    const bool tiled = tiling.has_value() && tiling->tiles_latents(z.size(3), z.size(4), f);
    // AutoencoderKLQwenImage's tiled_decode returns its blend unclamped.
    const bool clamp = !(tiled && config_.config_class == WanVaeClass::kQwenImage);
    int64_t next_frame = 0;
    const auto emit = [&](torch::Tensor frames) -> absl::Status {
      if (clamp) frames.clamp_(-1.0, 1.0);
      const int64_t first = next_frame;
      next_frame += frames.size(2);
      return sink(frames.to(home), first);
    };
    const auto decode_chunk = [&](const torch::Tensor& chunk, FeatureCache* cache) {
      return wan_vae_decode_chunk(config_, param, chunk, cache, attention_options_);
    };
    if (tiled) return run_tiled_decode(z, *tiling, f, decode_chunk, emit);
    FeatureCache cache;
    for (int64_t k = 0; k < z.size(2); ++k) {
      cache.begin_chunk(k + 1 == z.size(2));
      DIFFUSIOND_RETURN_IF_ERROR(emit(decode_chunk(z.narrow(2, k, 1), &cache)));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<torch::Tensor> WanVaeModel::decode(const torch::Tensor& latents,
                                                  const std::optional<WanVaeTiling>& tiling) const {
  std::vector<torch::Tensor> chunks;
  DIFFUSIOND_RETURN_IF_ERROR(decode_frames(latents, tiling, [&](const torch::Tensor& frames, int64_t) {
    chunks.push_back(frames);
    return absl::OkStatus();
  }));
  return status_of("joining the decoded frames", [&]() -> absl::StatusOr<torch::Tensor> {
    return chunks.size() == 1 ? chunks[0] : torch::cat(chunks, 2);
  });
}

absl::StatusOr<WanVaeEncoding> WanVaeModel::encode(const torch::Tensor& video, const torch::Tensor& eps,
                                                   const std::optional<WanVaeTiling>& tiling) const {
  const int64_t f = config_.spatial_factor();
  if (!video.defined() || video.dim() != 5 || video.size(0) < 1 || video.size(1) != config_.in_channels ||
      video.size(2) < 1 || (video.size(2) - 1) % 4 != 0 || video.size(3) < f || video.size(3) % f != 0 ||
      video.size(4) < f || video.size(4) % f != 0 || !video.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the clip to encode has shape [", shape_text(video), "], but the VAE expects a float [B, ", config_.in_channels,
        ", 1 + 4k frames, H, W] with H and W multiples of ", f));
  }
  if (tiling.has_value()) DIFFUSIOND_RETURN_IF_ERROR(tiling->validate(f));
  return status_of("the VAE encode", [&]() -> absl::StatusOr<WanVaeEncoding> {
    torch::NoGradGuard no_grad;
    const torch::Device device = forward_device(), home = video.device();
    const torch::ScalarType dtype = compute_dtype(*this);
    const torch::Tensor x = video.to(device, dtype);
    const WanVaeParamFn param = [this](const std::string& name) { return this->param(name); };
    // Frames 1, 4, 4, ... with one cache: upstream's _encode.
    const auto encode_clip = [&](const torch::Tensor& clip) {
      FeatureCache cache;
      std::vector<torch::Tensor> chunks;
      for (int64_t first = 0; first < clip.size(2); first += first == 0 ? 1 : 4) {
        const int64_t n = first == 0 ? 1 : 4;
        cache.begin_chunk(first + n >= clip.size(2));
        chunks.push_back(wan_vae_encode_chunk(config_, param, clip.narrow(2, first, n), &cache, attention_options_));
      }
      return chunks.size() == 1 ? chunks[0] : torch::cat(chunks, 2);
    };
    WanVaeEncoding e;
    if (tiling.has_value() && tiling->tiles_pixels(x.size(3), x.size(4))) {
      e.moments = run_tiled_encode(x, *tiling, f, encode_clip).to(home);
    } else {
      e.moments = encode_clip(x).to(home);
    }
    const int64_t z = config_.z_dim;
    e.mean = e.moments.narrow(1, 0, z);
    e.logvar = torch::clamp(e.moments.narrow(1, z, z), -30.0, 20.0);
    e.std = torch::exp(0.5 * e.logvar);
    const torch::Tensor mean = latents_mean(e.mean.scalar_type(), home);
    const torch::Tensor inv_std = latents_inv_std(e.mean.scalar_type(), home);
    e.latents_mode = (e.mean - mean) * inv_std;
    if (eps.defined()) {
      if (eps.sizes() != e.mean.sizes() || !eps.is_floating_point()) {
        return absl::InvalidArgumentError(absl::StrCat("eps has shape [", shape_text(eps), "], but the mean is [",
                                                       shape_text(e.mean), "]"));
      }
      e.sample = e.mean + e.std * eps.to(home, e.mean.scalar_type());
      e.latents = (e.sample - mean) * inv_std;
    }
    return e;
  });
}

}  // namespace diffusiond
