// The T5 / UMT5 encoder's parameter table (every parameter's canonical name,
// shape and kind), the key map from checkpoint names, inferring a config
// from tensor shapes (a single file without config.json), and the model's
// precision declaration.
//
// Canonical names are transformers' T5EncoderModel names: "shared.weight",
// "encoder.block.<i>.layer.0.SelfAttention.q.weight", …,
// "encoder.block.<i>.layer.1.DenseReluDense.wo.weight",
// "encoder.final_layer_norm.weight".
//
// Not here: reading config.json (t5_config.h), the forward (t5_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_T5_T5_PARAMS_H_
#define DIFFUSIOND_CORE_MODELS_T5_T5_PARAMS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/param_table.h"
#include "core/models/t5/t5_config.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// The token embedding's canonical name; transformers ties
// encoder.embed_tokens to it and saves it once, under this name.
inline constexpr absl::string_view kT5EmbeddingName = "shared.weight";

// Every parameter of the encoder for `config`, in upstream's registration
// order (the embedding first, the final norm last). Block 0 (every block
// for UMT5) holds relative_attention_bias [num_buckets, num_heads].
std::vector<ParamSpec> t5_parameter_table(const T5Config& config);

// The token table and the position-bias tables are Embeddings and stay at
// compute precision, as does `wo` (transformers keeps it in float32,
// _keep_in_fp32_modules; here it is at least never FP8). Norms are covered
// by the default "norm" pattern. Only q, k, v, o, wi (wi_0, wi_1) may take
// FP8 storage.
PrecisionDeclaration t5_precision_declaration();

// Maps a checkpoint name to its canonical name: transformers' names pass
// unchanged, names without the "encoder." prefix ("block.<i>.…",
// "final_layer_norm.weight") get it, and the tied embedding spelled
// "encoder.embed_tokens.weight" or "embed_tokens.weight" becomes
// "shared.weight" unless `has_shared` (the checkpoint has "shared.weight"
// too: that one is kept and the copy dropped). Returns nothing for the
// decoder ("decoder.…") and the LM head ("lm_head.…") of a full T5.
std::optional<std::string> t5_canonical_name(absl::string_view name, bool has_shared);

// The shape of the canonical tensor `name`, or nothing when absent.
using T5ShapeLookup = std::function<std::optional<std::vector<int64_t>>(absl::string_view)>;

// Infers the config from canonical tensor shapes and `names` (canonical):
// vocab and d_model from the embedding, heads and buckets from block 0's
// relative_attention_bias, d_kv from q, d_ff and the feed-forward kind
// from wi_0 (gated-gelu) or wi (relu), UMT5 when block 1 has its own
// bias. The max distance (not in any weight) is taken as 128, the value of
// every released T5 v1.1 and UMT5. INVALID_ARGUMENT naming `what` and the
// missing or inconsistent tensor.
absl::StatusOr<T5Config> infer_t5_config(const T5ShapeLookup& shape_of, const std::vector<std::string>& names,
                                         absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_T5_T5_PARAMS_H_
