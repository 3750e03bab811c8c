#include "core/models/common/text_conditioned_predictor.h"

#include <utility>

#include "core/models/flux/flux_latents.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<FlowPredictor> text_conditioned_flow_predictor(const std::vector<ConditioningInput>& inputs,
                                                              const Conditioning& positive,
                                                              const Conditioning* negative, const std::string& states,
                                                              const std::string& mask,
                                                              TextConditionedForward forward) {
  DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(positive, inputs, "conditioning"));
  if (negative != nullptr) DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(*negative, inputs, "negative conditioning"));
  std::vector<BatchedText> calls;
  DIFFUSIOND_ASSIGN_OR_RETURN(BatchedText first, batched_text(positive, states, mask, "conditioning"));
  calls.push_back(std::move(first));
  if (negative != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(BatchedText second, batched_text(*negative, states, mask, "negative conditioning"));
    calls.push_back(std::move(second));
  }
  return FlowPredictor([calls = std::move(calls), forward = std::move(forward)](
                           const torch::Tensor& latents, float t, bool with_negative) -> absl::StatusOr<FlowPrediction> {
    if (with_negative && calls.size() < 2) {
      return absl::InternalError("guidance asked of a predictor without a negative");
    }
    const int64_t h = latents.size(1), w = latents.size(2);
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor packed, pack_latents(latents.unsqueeze(0)));
    const torch::Tensor timestep = torch::full({1}, t, torch::kFloat32);
    FlowPrediction p;
    for (size_t i = 0; i < (with_negative ? calls.size() : 1); ++i) {
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(calls[i], packed, timestep, h / kTextConditionedPackedPatch,
                                                             w / kTextConditionedPackedPatch));
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor unpacked, unpack_latents(out.to(torch::kFloat32), h, w));
      (i == 0 ? p.positive : p.negative) = unpacked[0];
    }
    return p;
  });
}

ScheduleOptions text_conditioned_schedule(ScheduleOptions schedule, const std::vector<int64_t>& latent_shape) {
  if (latent_shape.size() == 3) {
    schedule.image_seq_len =
        (latent_shape[1] / kTextConditionedPackedPatch) * (latent_shape[2] / kTextConditionedPackedPatch);
  }
  return schedule;
}

}  // namespace diffusiond
