#include "core/models/z_image/z_image_predictor.h"

#include "core/util/status_macros.h"

namespace diffusiond {

FlowPredictor z_image_predictor(const ZImageModel& model, torch::Tensor cap_feats,
                                torch::Tensor neg_cap_feats) {
  return [&model, cap = std::move(cap_feats), neg = std::move(neg_cap_feats)](
             const torch::Tensor& latents, float t, bool with_negative) -> absl::StatusOr<FlowPrediction> {
    const torch::Tensor x = latents.unsqueeze(1);  // [C, F=1, H, W]
    std::vector<torch::Tensor> xs = {x}, caps = {cap};
    if (with_negative) {
      xs.push_back(x);
      caps.push_back(neg);
    }
    const torch::Tensor times = torch::full({static_cast<int64_t>(xs.size())}, t, torch::kFloat32);
    DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<torch::Tensor> out, model.forward(xs, times, caps));
    FlowPrediction p;
    p.positive = out[0].squeeze(1).to(torch::kFloat32);
    if (with_negative) p.negative = out[1].squeeze(1).to(torch::kFloat32);
    return p;
  };
}

}  // namespace diffusiond
