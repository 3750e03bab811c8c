// FluxModel's named-tensor Step: upstream's argument names, each checked
// here once so a remote caller learns exactly which input is wrong.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/flux/flux_model.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<NamedTensors> FluxModel::step(const NamedTensors& inputs) const {
  FluxInputs in;
  std::vector<std::pair<const char*, torch::Tensor*>> slots = {
      {"hidden_states", &in.hidden_states},         {"encoder_hidden_states", &in.encoder_hidden_states},
      {"pooled_projections", &in.pooled_projections}, {"timestep", &in.timestep},
      {"img_ids", &in.img_ids},                     {"txt_ids", &in.txt_ids}};
  if (config().guidance_embeds) slots.push_back({"guidance", &in.guidance});
  std::vector<std::string> problems;
  std::set<std::string> known;
  for (const auto& [name, slot] : slots) {
    known.insert(name);
    const auto it = inputs.find(name);
    if (it == inputs.end()) {
      problems.push_back(absl::StrCat("missing input \"", name, "\""));
    } else {
      *slot = it->second;
    }
  }
  for (const auto& [name, unused] : inputs) {
    if (known.count(name) != 0) continue;
    problems.push_back(name == "guidance"
                           ? std::string("unexpected input \"guidance\": the model has no guidance embedder")
                           : absl::StrCat("unexpected input \"", bounded(name, 64), "\""));
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FLUX Step: ", bounded_list(problems, 4, 120), " (expected \"hidden_states\", \"encoder_hidden_states\", "
        "\"pooled_projections\", \"timestep\", \"img_ids\", \"txt_ids\"",
        config().guidance_embeds ? " and \"guidance\")" : "; no \"guidance\")"));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
  return NamedTensors{{"out", std::move(out)}};
}

}  // namespace diffusiond
