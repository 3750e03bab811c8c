// QwenImageModel's named-tensor Step: upstream's argument names, each
// checked here once so a remote caller learns exactly which input is wrong.
// img_shapes, a Python list upstream, travels as an integer tensor.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/common/step_inputs.h"
#include "core/models/common/tensor_text.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kQwenImageStepExpected[] =
    " (expected \"hidden_states\", \"encoder_hidden_states\", \"timestep\", \"img_shapes\" and optionally "
    "\"encoder_hidden_states_mask\")";

// Far more images than an edit pipeline passes per item;
// bounds the per-entry work of a hostile request.
constexpr int64_t kQwenImageMaxImagesPerItem = 64;

// img_shapes [B, 3] integer rows (frames, rows, cols), or [B, N, 3] for N
// images per item, every item's the same: upstream uses item 0's for the
// whole batch and warns; this refuses instead.
absl::Status read_img_shapes(const torch::Tensor& t, int64_t batch, std::vector<QwenImageShape>* out) {
  const bool integral = t.defined() && !t.is_floating_point() && !t.is_complex() && t.scalar_type() != torch::kBool;
  const bool shaped = integral && (t.dim() == 2 || t.dim() == 3) && t.size(-1) == 3 && t.size(0) >= 1 &&
                      (batch <= 0 || t.size(0) == batch) &&
                      (t.dim() == 2 || (t.size(1) >= 1 && t.size(1) <= kQwenImageMaxImagesPerItem));
  if (!shaped) {
    const std::string b = batch > 0 ? absl::StrCat(batch) : "B";
    return absl::InvalidArgumentError(absl::StrCat(
        "\"img_shapes\" is ", t.defined() && !integral ? "a non-integer " : "", shape_of(t), ", expected an integer [",
        b, ", 3] or [", b, ", N, 3] of (frames, rows, cols), N at most ", kQwenImageMaxImagesPerItem));
  }
  const torch::Tensor items = (t.dim() == 2 ? t.unsqueeze(1) : t).to(torch::kCPU).to(torch::kLong).contiguous();
  if (!torch::equal(items, items[0].unsqueeze(0).expand_as(items))) {
    return absl::InvalidArgumentError("\"img_shapes\" differ between items: every item of a batch must share them");
  }
  const torch::Tensor first = items[0];
  out->clear();
  for (int64_t k = 0; k < first.size(0); ++k) {
    out->push_back({first[k][0].item<int64_t>(), first[k][1].item<int64_t>(), first[k][2].item<int64_t>()});
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NamedTensors> QwenImageModel::step(const NamedTensors& inputs) const {
  QwenImageInputs in;
  StepInputCheck check(inputs);
  check.require("hidden_states", &in.hidden_states);
  check.require("encoder_hidden_states", &in.encoder_hidden_states);
  check.require("timestep", &in.timestep);
  check.optional("encoder_hidden_states_mask", &in.encoder_hidden_states_mask);
  if (const torch::Tensor* shapes = check.find("img_shapes"); shapes == nullptr) {
    check.add_problem("missing input \"img_shapes\"");
  } else {
    const int64_t batch = in.hidden_states.defined() && in.hidden_states.dim() == 3 ? in.hidden_states.size(0) : 0;
    if (absl::Status s = read_img_shapes(*shapes, batch, &in.img_shapes); !s.ok()) {
      check.add_problem(std::string(s.message()));
    }
  }
  DIFFUSIOND_RETURN_IF_ERROR(check.finish("Qwen-Image Step: ", kQwenImageStepExpected));
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
  return NamedTensors{{"out", std::move(out)}};
}

}  // namespace diffusiond
