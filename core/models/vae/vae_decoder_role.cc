// VaeModel as the ImageDecoder role: its geometry, the activation bytes the
// engine reserves (vae_memory.h), and decode/encode with upstream's default
// tiling when asked to tile.
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/vae/vae_memory.h"
#include "core/models/vae/vae_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

std::optional<VaeTiling> tiling_of(const VaeConfig& config, bool tiled) {
  if (!tiled) return std::nullopt;
  return default_vae_tiling(config);
}

// [C, h, w] or [1, C, h, w]: a denoiser's output, or one with a batch of one.
torch::Tensor batched(const torch::Tensor& latents) { return latents.dim() == 3 ? latents.unsqueeze(0) : latents; }

}  // namespace

int64_t VaeModel::spatial_factor() const { return int64_t{1} << (config_.num_blocks() - 1); }

absl::Status VaeModel::check_latents(const torch::Tensor& latents) const {
  const torch::Tensor z = batched(latents);
  if (z.dim() != 4 || z.size(0) != 1 || z.size(1) != config_.latent_channels || z.size(2) < 1 || z.size(3) < 1 ||
      !z.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat("latents for this VAE must be a float [", config_.latent_channels,
                                                   ", h, w], got [", absl::StrJoin(latents.sizes(), ", "), "]"));
  }
  return absl::OkStatus();
}

int64_t VaeModel::decode_activation_bytes(const torch::Tensor& latents, bool tiled) const {
  const torch::Tensor z = batched(latents);
  return vae_decode_activation_bytes(config_, 1, z.size(2), z.size(3), torch::elementSize(compute_dtype(*this)),
                                     tiling_of(config_, tiled), attention_options_);
}

absl::StatusOr<torch::Tensor> VaeModel::decode_latents(const torch::Tensor& latents, bool tiled) const {
  return decode(batched(latents), tiling_of(config_, tiled));
}

absl::StatusOr<torch::Tensor> VaeModel::encode_image(const torch::Tensor& image, const torch::Tensor& eps,
                                                     bool tiled) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(VaeEncoding encoding, encode(image, eps, tiling_of(config_, tiled)));
  return eps.defined() ? encoding.latents : encoding.latents_mode;
}

}  // namespace diffusiond
