// What the config.json of a Qwen-VL checkpoint says about its language
// tower, read alike for Qwen2.5-VL and Qwen3-VL: which object holds the text
// fields (transformers 4.5x nests them in text_config; older Qwen2.5-VL
// files keep them at the top level), the identity checks, the M-RoPE
// sections of rope_scaling, the features neither port runs, and the checks
// on the tower's shape that both forwards rely on.
//
// And how their checkpoints name the tower's tensors.
//
// Not here: each architecture's fields and defaults (<arch>/<arch>_config.h).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_QWEN_VL_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_QWEN_VL_CONFIG_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/checkpoint.h"
#include "core/models/common/qwen_text_tower.h"
#include "core/text/tokenizer.h"
#include "core/util/json.h"

namespace diffusiond {

// The object holding the tower's fields: root's "text_config" when that is
// an object, else root itself.
const nlohmann::json& qwen_vl_text_fields(const nlohmann::json& root);

// Checks that `root` is an object of model_type `model_type` whose
// "architectures", when given, are all among `architectures`.
// INVALID_ARGUMENT naming `what`, the field, its value and what was
// expected.
absl::Status check_qwen_vl_identity(const nlohmann::json& root, absl::string_view what, absl::string_view model_type,
                                    const std::vector<absl::string_view>& architectures);

// Reads rope_scaling of `text` into `*sections`: its "mrope_section" (three
// integers) when given, else `*sections` unchanged. Its "type" and
// "rope_type", when given, must be "default" or "mrope" (transformers'
// name for default RoPE with M-RoPE positions); `allow_interleaved` says
// whether "mrope_interleaved" may be true. `required`: refuse a missing or
// null rope_scaling. INVALID_ARGUMENT naming the field otherwise.
absl::Status read_mrope_scaling(const nlohmann::json& text, absl::string_view what, bool required,
                                bool allow_interleaved, std::array<int64_t, 3>* sections);

// Refuses what neither port implements: an activation other than silu,
// sliding-window attention, layer types other than full attention.
absl::Status check_qwen_vl_unsupported(const nlohmann::json& text, absl::string_view what);

// Checks what the shared tower relies on: sizes in bounds, an even
// head_dim, heads a multiple of kv heads, positive theta and eps, M-RoPE
// sections that are not negative and sum to head_dim / 2. INVALID_ARGUMENT
// "<spec.name> config: ..." naming the field otherwise.
absl::Status validate_qwen_tower(const QwenTowerSpec& spec, int64_t max_position_embeddings);

// Maps a Qwen-VL checkpoint name to the tower's canonical name (no prefix,
// qwen_tower_parameter_table's): the first of `prefixes` it starts with is
// removed. Returns nothing for the vision tower ("visual.*",
// "model.visual.*") and the LM head ("lm_head.*"), which a text encoder
// never reads or reserves. Other names pass unchanged (the table check
// then names them).
std::optional<std::string> qwen_vl_canonical_name(absl::string_view name,
                                                  const std::vector<absl::string_view>& prefixes);

// A VL tower's tokenizer (Qwen2's byte-level BPE: tokenizer.json, or
// vocab.json + merges.txt) and where it came from: from the first of
// tokenizer_folders(checkpoint) holding one; null and "no tokenizer found"
// without one. load_tokenizer's errors for files it cannot read.
struct FoundTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string note;
};
absl::StatusOr<FoundTokenizer> find_qwen_vl_tokenizer(const Checkpoint& checkpoint);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_QWEN_VL_CONFIG_H_
