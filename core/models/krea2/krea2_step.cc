// Krea2Model's named-tensor Step: upstream's argument names, each checked
// here once so a remote caller learns exactly which input is wrong; shapes
// are checked by forward().
#include "core/models/common/step_inputs.h"
#include "core/models/krea2/krea2_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kKrea2StepExpected[] =
    " (expected \"hidden_states\", \"encoder_hidden_states\", \"timestep\", \"position_ids\" and optionally "
    "\"encoder_attention_mask\")";

}  // namespace

absl::StatusOr<NamedTensors> Krea2Model::step(const NamedTensors& inputs) const {
  Krea2Inputs in;
  StepInputCheck check(inputs);
  check.require("hidden_states", &in.hidden_states);
  check.require("encoder_hidden_states", &in.encoder_hidden_states);
  check.require("timestep", &in.timestep);
  check.require("position_ids", &in.position_ids);
  check.optional("encoder_attention_mask", &in.encoder_attention_mask);
  DIFFUSIOND_RETURN_IF_ERROR(check.finish("Krea 2 Step: ", kKrea2StepExpected));
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
  return NamedTensors{{"out", std::move(out)}};
}

}  // namespace diffusiond
