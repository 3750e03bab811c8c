#include "core/models/image_decoder.h"

#include "core/models/activation_estimate.h"
#include "absl/strings/str_cat.h"

namespace diffusiond {

ActivationEstimate ImageDecoder::step_activations(const NamedTensors& inputs, bool) const {
  const auto input = [&](const char* name) {
    const auto it = inputs.find(name);
    return it != inputs.end() && it->second.defined() ? it->second : torch::Tensor();
  };
  torch::Tensor latents = input("latents");
  if (const torch::Tensor image = input("image"); image.dim() == 4 && !latents.defined()) {
    const int64_t f = spatial_factor();
    latents = torch::empty(
        {image.size(0), latent_channels(), (image.size(2) + f - 1) / f, (image.size(3) + f - 1) / f});
  }
  if (latents.dim() != 4 || !check_latents(latents[0]).ok()) return {};
  return {latents.size(0) * decode_activation_bytes(latents[0], /*tiled=*/false),
          absl::StrCat(architecture(), ": ", latents.size(0), " untiled decodes of latents ", latents.size(2), "x",
                       latents.size(3))};
}

}  // namespace diffusiond
