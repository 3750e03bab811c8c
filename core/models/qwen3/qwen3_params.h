// The Qwen3 parameter table (every parameter's canonical name, shape and
// kind), the key map from transformers checkpoint names, and the model's
// precision declaration.
//
// Canonical names are Qwen3Model's (no "model." prefix): "embed_tokens.weight",
// "layers.<i>.self_attn.q_proj.weight", …, "norm.weight".
#ifndef DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/common/qwen_text_tower.h"
#include "core/models/qwen3/qwen3_config.h"
#include "core/models/param_table.h"
#include "core/precision/param_kind.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// The shared tower's shape for `config`: q/k norms, no biases, plain RoPE.
QwenTowerSpec qwen3_tower_spec(const Qwen3Config& config);

// Every parameter of Qwen3Model for `config`, in upstream's registration
// order (embed_tokens first, the final norm last).
std::vector<ParamSpec> qwen3_parameter_table(const Qwen3Config& config);

// Embeddings and every norm stay at compute precision; only the attention
// and MLP projections may take FP8 storage.
PrecisionDeclaration qwen3_precision_declaration();

// Maps a checkpoint name to its canonical name: Qwen3ForCausalLM's "model."
// prefix is removed, Qwen3Model's names pass unchanged. Returns nothing for
// "lm_head.weight" (the LM head; hidden states do not use it).
std::optional<std::string> qwen3_canonical_name(absl::string_view name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_PARAMS_H_
