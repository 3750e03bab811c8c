// VaeModel as the ImageDecoder role: its geometry, the activation bytes the
// engine reserves (vae_memory.h), and decode/encode with upstream's default
// tiling when asked to tile.
#include <optional>

#include "core/models/vae/vae_memory.h"
#include "core/models/vae/vae_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

std::optional<VaeTiling> tiling_of(const VaeConfig& config, bool tiled) {
  if (!tiled) return std::nullopt;
  return default_vae_tiling(config);
}

}  // namespace

int64_t VaeModel::spatial_factor() const { return int64_t{1} << (config_.num_blocks() - 1); }

int64_t VaeModel::decode_activation_bytes(int64_t h, int64_t w, bool tiled) const {
  return vae_decode_activation_bytes(config_, 1, h, w, torch::elementSize(compute_dtype(*this)),
                                     tiling_of(config_, tiled), attention_options_);
}

absl::StatusOr<torch::Tensor> VaeModel::decode_latents(const torch::Tensor& latents, bool tiled) const {
  return decode(latents, tiling_of(config_, tiled));
}

absl::StatusOr<torch::Tensor> VaeModel::encode_image(const torch::Tensor& image, bool tiled) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(VaeEncoding encoding, encode(image, torch::Tensor(), tiling_of(config_, tiled)));
  return encoding.latents_mode;
}

}  // namespace diffusiond
