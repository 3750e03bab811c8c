// AnimaTextConditioner's parameter table (diffusers names, shapes and
// kinds) and its key names: the text_conditioner/ folder's own, or the
// community single file's adapter under "net.llm_adapter." (upstream's
// split_anima_transformer_checkpoint strips that prefix; the names are
// otherwise the same). The file's DiT tensors are not this model's.
#ifndef DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_PARAMS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/anima_conditioner/anima_conditioner_config.h"
#include "core/models/param_table.h"

namespace diffusiond {

// Every parameter of AnimaTextConditioner for `config`, in upstream's
// registration order.
std::vector<ParamSpec> anima_conditioner_parameter_table(const AnimaConditionerConfig& config);

// Maps a checkpoint name to the adapter's diffusers name: the prefix
// "net.llm_adapter." (or "model.diffusion_model.llm_adapter.",
// "llm_adapter.") stripped; nothing for the rest of a "net." or
// "model.diffusion_model." file (the DiT, which the Cosmos family reads);
// any other name unchanged (a text_conditioner/ folder).
std::optional<std::string> anima_conditioner_canonical_name(absl::string_view name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_PARAMS_H_
