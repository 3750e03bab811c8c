// VaeModel's named-tensor Step: decode or encode by the names of the inputs
// given (vae_model.h lists them). Names are checked here so a remote caller
// learns exactly which input is wrong.
#include <optional>

#include "core/models/vae/vae_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<NamedTensors> VaeModel::step(const NamedTensors& inputs) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(const VaeStepInputs in, read_vae_step_inputs(inputs, "[B, L, h, w]", "[B, 3, H, W]"));
  const std::optional<VaeTiling> tiling =
      in.tiled ? std::optional<VaeTiling>(default_vae_tiling(config_)) : std::nullopt;
  if (in.decoding) {
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor image, decode(in.input, tiling));
    return NamedTensors{{"image", std::move(image)}};
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const VaeEncoding e, encode(in.input, in.eps, tiling));
  return vae_encoding_outputs(e);
}

}  // namespace diffusiond
