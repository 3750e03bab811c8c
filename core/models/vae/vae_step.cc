// VaeModel's named-tensor Step: decode or encode by the names of the inputs
// given (vae_model.h lists them). Names are checked here so a remote caller
// learns exactly which input is wrong.
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/models/vae/vae_model.h"
#include "core/util/bounded_text.h"
#include "core/util/exception_status.h"

namespace diffusiond {

absl::StatusOr<NamedTensors> VaeModel::step(const NamedTensors& inputs) const {
  const auto latents = inputs.find("latents");
  const auto image = inputs.find("image");
  if ((latents == inputs.end()) == (image == inputs.end())) {
    return absl::InvalidArgumentError(
        "VAE Step needs exactly one of \"latents\" [B, L, h, w] (decode) or \"image\" [B, 3, H, W] "
        "(encode, with optional \"eps\"), plus an optional one-element \"tiled\"");
  }
  const bool decoding = latents != inputs.end();
  std::set<std::string> allowed = {decoding ? "latents" : "image", "tiled"};
  if (!decoding) allowed.insert("eps");
  for (const auto& [name, tensor] : inputs) {
    if (allowed.count(name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\" for a VAE ",
                                                     decoding ? "decode" : "encode"));
    }
  }
  std::optional<VaeTiling> tiling;
  if (const auto tiled = inputs.find("tiled"); tiled != inputs.end()) {
    if (!tiled->second.defined() || tiled->second.numel() != 1) {
      return absl::InvalidArgumentError("input \"tiled\" must hold exactly one element");
    }
    absl::StatusOr<bool> on = status_of("reading \"tiled\"", [&]() -> absl::StatusOr<bool> {
      return tiled->second.to(torch::kFloat64).item<double>() != 0;
    });
    if (!on.ok()) return on.status();
    if (*on) tiling = default_vae_tiling(config_);
  }
  NamedTensors out;
  if (decoding) {
    absl::StatusOr<torch::Tensor> decoded = decode(latents->second, tiling);
    if (!decoded.ok()) return decoded.status();
    out["image"] = *std::move(decoded);
    return out;
  }
  const auto eps = inputs.find("eps");
  absl::StatusOr<VaeEncoding> e =
      encode(image->second, eps == inputs.end() ? torch::Tensor() : eps->second, tiling);
  if (!e.ok()) return e.status();
  out["moments"] = e->moments;
  out["mean"] = e->mean;
  out["logvar"] = e->logvar;
  out["std"] = e->std;
  out["latents_mode"] = e->latents_mode;
  if (e->sample.defined()) {
    out["sample"] = e->sample;
    out["latents"] = e->latents;
  }
  return out;
}

}  // namespace diffusiond
