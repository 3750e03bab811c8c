// ZImageModel's architecture-generic entry points: named-tensor Step and the
// denoise loop's predictor. Names and shapes are checked here so a remote
// caller learns exactly which input is wrong.
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/z_image/z_image_model.h"
#include "core/models/z_image/z_image_predictor.h"
#include "core/models/common/tensor_text.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

absl::Status check_caption(const torch::Tensor& cap, int64_t dim, absl::string_view what) {
  if (!cap.defined() || cap.dim() != 2 || cap.size(0) < 1 || cap.size(1) != dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be [L, ", dim, "] with L >= 1, got ", shape_of(cap)));
  }
  if (!cap.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a floating-point tensor"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NamedTensors> ZImageModel::step(const NamedTensors& inputs) const {
  const auto x = inputs.find("x");
  const auto t = inputs.find("t");
  if (x == inputs.end() || t == inputs.end()) {
    return absl::InvalidArgumentError(
        "Z-Image Step needs inputs \"x\" [B, C, F, H, W], \"t\" [B] and \"cap_feats\" [B, L, D] or "
        "\"cap_feats_0\" … \"cap_feats_<B-1>\" [L_i, D]");
  }
  if (x->second.dim() != 5 || x->second.size(0) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("input \"x\" must be [B, C, F, H, W] with B >= 1, got ", shape_of(x->second)));
  }
  const int64_t batch = x->second.size(0);
  if (t->second.dim() != 1 || t->second.size(0) != batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("input \"t\" must be [", batch, "], got ", shape_of(t->second)));
  }
  std::set<std::string> used = {"x", "t"};
  std::vector<torch::Tensor> caps;
  std::vector<std::string> cap_names;  // how the caller named each item's caption
  if (const auto stacked = inputs.find("cap_feats"); stacked != inputs.end()) {
    const torch::Tensor& c = stacked->second;
    if (c.dim() != 3 || c.size(0) != batch) {
      return absl::InvalidArgumentError(absl::StrCat("input \"cap_feats\" must be [", batch,
                                                     ", L, D], got ", shape_of(c)));
    }
    for (int64_t i = 0; i < batch; ++i) {
      caps.push_back(c[i]);
      cap_names.push_back(absl::StrCat("input \"cap_feats\" item ", i));
    }
    used.insert("cap_feats");
  } else {
    for (int64_t i = 0; i < batch; ++i) {
      const std::string name = absl::StrCat("cap_feats_", i);
      const auto it = inputs.find(name);
      if (it == inputs.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "missing input \"", name, "\": give \"cap_feats\" [B, L, D] or one \"cap_feats_<i>\" per item"));
      }
      caps.push_back(it->second);
      cap_names.push_back(absl::StrCat("input \"", name, "\""));
      used.insert(name);
    }
  }
  for (const auto& [name, tensor] : inputs) {
    if (used.count(name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\" for Z-Image"));
    }
  }
  for (size_t i = 0; i < caps.size(); ++i) {
    DIFFUSIOND_RETURN_IF_ERROR(check_caption(caps[i], config().cap_feat_dim, cap_names[i]));
  }
  if (!x->second.is_floating_point() || !t->second.is_floating_point()) {
    return absl::InvalidArgumentError("inputs \"x\" and \"t\" must be floating-point tensors");
  }
  std::vector<torch::Tensor> xs;
  for (int64_t i = 0; i < batch; ++i) xs.push_back(x->second[i]);
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<torch::Tensor> out, forward(xs, t->second, caps));
  return NamedTensors{{"out", torch::stack(out)}};
}

std::vector<ConditioningInput> ZImageModel::conditioning_inputs() const {
  ConditioningInput cap;
  cap.name = "cap_feats";
  cap.shape = {-1, config().cap_feat_dim};
  cap.meaning = "caption features: the text encoder's hidden states of the prompt's tokens";
  return {cap};
}

absl::StatusOr<FlowPredictor> ZImageModel::flow_predictor(const Conditioning& positive,
                                                          const Conditioning* negative) const {
  const std::vector<ConditioningInput> inputs = conditioning_inputs();
  DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(positive, inputs, "conditioning"));
  if (negative != nullptr) DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(*negative, inputs, "negative conditioning"));
  return z_image_predictor(*this, positive.tensors.at("cap_feats"),
                           negative != nullptr ? negative->tensors.at("cap_feats") : torch::Tensor());
}

}  // namespace diffusiond
