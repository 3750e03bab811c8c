#include "core/models/image_decoder.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/models/activation_estimate.h"
#include "core/util/bounded_text.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::Status ImageDecoder::decode_latent_frames(const torch::Tensor& latents, bool tiled,
                                                const DecodedFramesSink& sink) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(const torch::Tensor image, decode_latents(latents, tiled));
  return sink(image.unsqueeze(2), 0);
}

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

absl::StatusOr<VaeStepInputs> read_vae_step_inputs(const NamedTensors& inputs, absl::string_view latents_shape,
                                                   absl::string_view image_shape) {
  const auto latents = inputs.find("latents");
  const auto image = inputs.find("image");
  if ((latents == inputs.end()) == (image == inputs.end())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "VAE Step needs exactly one of \"latents\" ", latents_shape, " (decode) or \"image\" ", image_shape,
        " (encode, with optional \"eps\"), plus an optional one-element \"tiled\""));
  }
  VaeStepInputs r;
  r.decoding = latents != inputs.end();
  r.input = r.decoding ? latents->second : image->second;
  std::set<std::string> allowed = {r.decoding ? "latents" : "image", "tiled"};
  if (!r.decoding) allowed.insert("eps");
  for (const auto& [name, tensor] : inputs) {
    if (allowed.count(name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\" for a VAE ",
                                                     r.decoding ? "decode" : "encode"));
    }
  }
  if (const auto eps = inputs.find("eps"); eps != inputs.end()) r.eps = eps->second;
  if (const auto tiled = inputs.find("tiled"); tiled != inputs.end()) {
    if (!tiled->second.defined() || tiled->second.numel() != 1) {
      return absl::InvalidArgumentError("input \"tiled\" must hold exactly one element");
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(r.tiled, status_of("reading \"tiled\"", [&]() -> absl::StatusOr<bool> {
      return tiled->second.to(torch::kFloat64).item<double>() != 0;
    }));
  }
  return r;
}

}  // namespace diffusiond
