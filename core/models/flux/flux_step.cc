// FluxModel's named-tensor Step: upstream's argument names, each checked
// here once so a remote caller learns exactly which input is wrong.
#include "absl/strings/str_cat.h"
#include "core/models/common/step_inputs.h"
#include "core/models/flux/flux_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<NamedTensors> FluxModel::step(const NamedTensors& inputs) const {
  FluxInputs in;
  StepInputCheck check(inputs);
  check.require("hidden_states", &in.hidden_states);
  check.require("encoder_hidden_states", &in.encoder_hidden_states);
  check.require("pooled_projections", &in.pooled_projections);
  check.require("timestep", &in.timestep);
  check.require("img_ids", &in.img_ids);
  check.require("txt_ids", &in.txt_ids);
  if (config().guidance_embeds) {
    check.require("guidance", &in.guidance);
  } else {
    check.explain_unexpected("guidance", "unexpected input \"guidance\": the model has no guidance embedder");
  }
  DIFFUSIOND_RETURN_IF_ERROR(check.finish(
      "FLUX Step: ",
      absl::StrCat(" (expected \"hidden_states\", \"encoder_hidden_states\", \"pooled_projections\", \"timestep\", "
                   "\"img_ids\", \"txt_ids\"",
                   config().guidance_embeds ? " and \"guidance\")" : "; no \"guidance\")")));
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
  return NamedTensors{{"out", std::move(out)}};
}

}  // namespace diffusiond
