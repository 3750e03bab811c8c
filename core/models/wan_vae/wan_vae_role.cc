// WanVaeModel as the ImageDecoder role and as a named-tensor Step: the
// shapes it takes, the activation bytes the engine reserves
// (wan_vae_memory.h), and decode / encode with upstream's default tiles when
// asked to tile.
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/activation_estimate.h"
#include "core/models/wan_vae/wan_vae_memory.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

std::optional<WanVaeTiling> tiling_of(bool tiled) {
  if (!tiled) return std::nullopt;
  return WanVaeTiling();
}

// [C, F, h, w] or [1, C, F, h, w] as [1, C, F, h, w]; [C, h, w] as one frame.
torch::Tensor batched(const torch::Tensor& latents) {
  if (latents.dim() == 3) return latents.unsqueeze(0).unsqueeze(2);
  return latents.dim() == 4 ? latents.unsqueeze(0) : latents;
}

}  // namespace

absl::Status WanVaeModel::check_latents(const torch::Tensor& latents) const {
  const torch::Tensor z = latents.defined() ? batched(latents) : latents;
  if (!z.defined() || z.dim() != 5 || z.size(0) != 1 || z.size(1) != config_.z_dim || z.size(2) < 1 ||
      z.size(3) < 1 || z.size(4) < 1 || !z.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "latents for this VAE must be a float [", config_.z_dim, ", frames, h, w] (or [", config_.z_dim,
        ", h, w] for one frame), got [", latents.defined() ? absl::StrJoin(latents.sizes(), ", ") : "", "]"));
  }
  return absl::OkStatus();
}

int64_t WanVaeModel::decode_activation_bytes(const torch::Tensor& latents, bool tiled) const {
  const torch::Tensor z = batched(latents);
  const int64_t element = torch::elementSize(compute_dtype(*this));
  const std::optional<WanVaeTiling> tiling = tiling_of(tiled);
  const WanVaeDecodeBytes decode =
      wan_vae_decode_activation_bytes(config_, 1, z.size(2), z.size(3), z.size(4), element, tiling, attention_options_);
  const int64_t f = config_.spatial_factor();
  const int64_t encode = wan_vae_encode_activation_bytes(config_, 1, config_.frames_of(z.size(2)), z.size(3) * f,
                                                         z.size(4) * f, element, tiling, attention_options_);
  return std::max(z.size(2) == 1 ? decode.streamed : decode.joined, encode);
}

absl::StatusOr<torch::Tensor> WanVaeModel::decode_latents(const torch::Tensor& latents, bool tiled) const {
  DIFFUSIOND_RETURN_IF_ERROR(check_latents(latents));
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor frames, decode(batched(latents), tiling_of(tiled)));
  return frames.size(2) == 1 ? frames.select(2, 0) : frames;
}

absl::Status WanVaeModel::decode_latent_frames(const torch::Tensor& latents, bool tiled,
                                               const DecodedFramesSink& sink) const {
  DIFFUSIOND_RETURN_IF_ERROR(check_latents(latents));
  return decode_frames(batched(latents), tiling_of(tiled), sink);
}

int64_t WanVaeModel::latent_frames_activation_bytes(const torch::Tensor& latents, bool tiled) const {
  const torch::Tensor z = batched(latents);
  const int64_t element = torch::elementSize(compute_dtype(*this));
  return wan_vae_decode_activation_bytes(config_, 1, z.size(2), z.size(3), z.size(4), element, tiling_of(tiled),
                                         attention_options_)
      .streamed;
}

absl::StatusOr<torch::Tensor> WanVaeModel::encode_image(const torch::Tensor& image, const torch::Tensor& eps,
                                                        bool tiled) const {
  // An image [B, 3, H, W] is a one-frame clip; its latents lose the axis again.
  const bool one_frame = image.defined() && image.dim() == 4;
  const torch::Tensor clip = one_frame ? image.unsqueeze(2) : image;
  const torch::Tensor noise = one_frame && eps.defined() && eps.dim() == 4 ? eps.unsqueeze(2) : eps;
  DIFFUSIOND_ASSIGN_OR_RETURN(WanVaeEncoding e, encode(clip, noise, tiling_of(tiled)));
  const torch::Tensor latents = eps.defined() ? e.latents : e.latents_mode;
  return one_frame ? latents.select(2, 0) : latents;
}

ActivationEstimate WanVaeModel::step_activations(const NamedTensors& inputs, bool) const {
  const auto input = [&](const char* name) {
    const auto it = inputs.find(name);
    return it != inputs.end() && it->second.defined() ? it->second : torch::Tensor();
  };
  const torch::Tensor latents = input("latents"), image = input("image");
  const int64_t element = torch::elementSize(compute_dtype(*this));
  if (latents.dim() == 5 && latents.size(1) == config_.z_dim) {
    const WanVaeDecodeBytes d = wan_vae_decode_activation_bytes(config_, latents.size(0), latents.size(2),
                                                                latents.size(3), latents.size(4), element,
                                                                std::nullopt, attention_options_);
    return {d.joined, absl::StrCat(architecture(), ": an untiled decode of latents [",
                                   absl::StrJoin(latents.sizes(), ", "), "]")};
  }
  if (image.dim() == 5 && image.size(1) == config_.in_channels) {
    return {wan_vae_encode_activation_bytes(config_, image.size(0), image.size(2), image.size(3), image.size(4),
                                            element, std::nullopt, attention_options_),
            absl::StrCat(architecture(), ": an untiled encode of [", absl::StrJoin(image.sizes(), ", "), "]")};
  }
  return {};
}

absl::StatusOr<NamedTensors> WanVaeModel::step(const NamedTensors& inputs) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(const VaeStepInputs in,
                              read_vae_step_inputs(inputs, "[B, z, F, h, w]", "[B, 3, T, H, W]"));
  const std::optional<WanVaeTiling> tiling = tiling_of(in.tiled);
  if (in.decoding) {
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor image, decode(in.input, tiling));
    return NamedTensors{{"image", std::move(image)}};
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const WanVaeEncoding e, encode(in.input, in.eps, tiling));
  return vae_encoding_outputs(e);
}

}  // namespace diffusiond
