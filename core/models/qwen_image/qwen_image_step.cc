// QwenImageModel's named-tensor Step: upstream's argument names, each
// checked here once so a remote caller learns exactly which input is wrong.
// img_shapes, a Python list upstream, travels as an integer tensor.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/common/tensor_text.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kQwenImageStepExpected[] =
    " (expected \"hidden_states\", \"encoder_hidden_states\", \"timestep\", \"img_shapes\" and optionally "
    "\"encoder_hidden_states_mask\")";

// img_shapes [B, 3] integer rows (frames, rows, cols), all equal: upstream
// uses item 0's for the whole batch and warns; this refuses instead.
absl::Status read_img_shapes(const torch::Tensor& t, int64_t batch, std::array<int64_t, 3>* out) {
  const bool integral = t.defined() && !t.is_floating_point() && !t.is_complex() && t.scalar_type() != torch::kBool;
  if (!integral || t.dim() != 2 || t.size(1) != 3 || (batch > 0 && t.size(0) != batch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"img_shapes\" is ", t.defined() && !integral ? "a non-integer " : "", shape_of(t),
                     ", expected an integer [", batch > 0 ? absl::StrCat(batch) : "B", ", 3] of (frames, rows, cols)"));
  }
  const torch::Tensor rows = t.to(torch::kCPU).to(torch::kLong);
  if (!torch::equal(rows, rows[0].unsqueeze(0).expand_as(rows))) {
    return absl::InvalidArgumentError("\"img_shapes\" rows differ: every item of a batch must share its image shape");
  }
  for (int i = 0; i < 3; ++i) (*out)[i] = rows[0][i].item<int64_t>();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NamedTensors> QwenImageModel::step(const NamedTensors& inputs) const {
  QwenImageInputs in;
  const std::vector<std::pair<const char*, torch::Tensor*>> slots = {
      {"hidden_states", &in.hidden_states},
      {"encoder_hidden_states", &in.encoder_hidden_states},
      {"timestep", &in.timestep}};
  std::vector<std::string> problems;
  std::set<std::string> known = {"img_shapes", "encoder_hidden_states_mask"};
  for (const auto& [name, slot] : slots) {
    known.insert(name);
    const auto it = inputs.find(name);
    if (it == inputs.end()) {
      problems.push_back(absl::StrCat("missing input \"", name, "\""));
    } else {
      *slot = it->second;
    }
  }
  if (const auto it = inputs.find("encoder_hidden_states_mask"); it != inputs.end()) {
    in.encoder_hidden_states_mask = it->second;
  }
  if (const auto it = inputs.find("img_shapes"); it == inputs.end()) {
    problems.push_back("missing input \"img_shapes\"");
  } else {
    const int64_t batch = in.hidden_states.defined() && in.hidden_states.dim() == 3 ? in.hidden_states.size(0) : 0;
    if (absl::Status s = read_img_shapes(it->second, batch, &in.img_shape); !s.ok()) {
      problems.push_back(std::string(s.message()));
    }
  }
  for (const auto& [name, unused] : inputs) {
    if (known.count(name) == 0) problems.push_back(absl::StrCat("unexpected input \"", bounded(name, 64), "\""));
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Qwen-Image Step: ", bounded_list(problems, 4, 120), kQwenImageStepExpected));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
  return NamedTensors{{"out", std::move(out)}};
}

}  // namespace diffusiond
