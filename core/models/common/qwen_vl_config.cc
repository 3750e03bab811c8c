#include "core/models/common/qwen_vl_config.h"

#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/models/config_limits.h"
#include "core/text/tokenizer_files.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

bool present(const json& root, const char* field) { return root.contains(field) && !root.at(field).is_null(); }

}  // namespace

const json& qwen_vl_text_fields(const json& root) {
  if (root.is_object() && root.contains("text_config") && root.at("text_config").is_object()) {
    return root.at("text_config");
  }
  return root;
}

absl::Status check_qwen_vl_identity(const json& root, absl::string_view what, absl::string_view model_type,
                                    const std::vector<absl::string_view>& architectures) {
  if (!root.is_object()) return absl::InvalidArgumentError(absl::StrCat(what, ": not a JSON object"));
  if (root.value("model_type", json()) != json(std::string(model_type))) {
    return json_field_error(what, "model_type", root.value("model_type", json()), absl::StrCat("\"", model_type, "\""));
  }
  if (!present(root, "architectures")) return absl::OkStatus();
  const json& archs = root.at("architectures");
  bool ok = archs.is_array() && !archs.empty();
  for (const json& a : ok ? archs : json::array()) {
    bool known = false;
    for (absl::string_view name : architectures) known = known || a == json(std::string(name));
    ok = ok && known;
  }
  if (!ok) {
    return json_field_error(
        what, "architectures", archs,
        absl::StrCat("one of [\"", absl::StrJoin(architectures, "\", \""), "\"] (other heads are not supported)"));
  }
  return absl::OkStatus();
}

absl::Status read_mrope_scaling(const json& text, absl::string_view what, bool required, bool allow_interleaved,
                                std::array<int64_t, 3>* sections) {
  if (!present(text, "rope_scaling")) {
    if (!required) return absl::OkStatus();
    return json_field_error(what, "rope_scaling", text.value("rope_scaling", json()),
                            "an object with mrope_section (M-RoPE)");
  }
  const json& rope = text.at("rope_scaling");
  if (!rope.is_object()) return json_field_error(what, "rope_scaling", rope, "an object");
  for (const char* key : {"type", "rope_type"}) {
    if (present(rope, key) && rope.at(key) != json("default") && rope.at(key) != json("mrope")) {
      return json_field_error(what, absl::StrCat("rope_scaling.", key), rope.at(key),
                              "\"default\" or \"mrope\" (RoPE scaling is not supported)");
    }
  }
  if (present(rope, "mrope_interleaved") && rope.at("mrope_interleaved") != json(allow_interleaved) &&
      rope.at("mrope_interleaved") != json(false)) {
    return json_field_error(what, "rope_scaling.mrope_interleaved", rope.at("mrope_interleaved"),
                            allow_interleaved ? "a boolean" : "false (interleaved M-RoPE is Qwen3-VL's)");
  }
  if (!present(rope, "mrope_section")) return absl::OkStatus();
  const json& s = rope.at("mrope_section");
  if (!s.is_array() || s.size() != 3 || !s[0].is_number_integer() || !s[1].is_number_integer() ||
      !s[2].is_number_integer()) {
    return json_field_error(what, "rope_scaling.mrope_section", s, "three integers");
  }
  for (size_t i = 0; i < 3; ++i) (*sections)[i] = s[i].get<int64_t>();
  return absl::OkStatus();
}

absl::Status check_qwen_vl_unsupported(const json& text, absl::string_view what) {
  if (present(text, "use_sliding_window") && text.at("use_sliding_window") != json(false)) {
    return json_field_error(what, "use_sliding_window", text.at("use_sliding_window"),
                            "false (sliding-window attention is not supported)");
  }
  if (present(text, "layer_types")) {
    const json& types = text.at("layer_types");
    bool ok = types.is_array();
    for (const json& t : ok ? types : json::array()) ok = ok && t == json("full_attention");
    if (!ok) return json_field_error(what, "layer_types", types, "\"full_attention\" for every layer");
  }
  if (present(text, "hidden_act") && text.at("hidden_act") != json("silu")) {
    return json_field_error(what, "hidden_act", text.at("hidden_act"), "\"silu\"");
  }
  return absl::OkStatus();
}

absl::Status validate_qwen_tower(const QwenTowerSpec& c, int64_t max_position_embeddings) {
  // Bounds first: the counts size the parameter table and the RoPE table.
  DIFFUSIOND_RETURN_IF_ERROR(
      check_int_fields(c.name, {{"vocab_size", c.vocab_size, 1, kMaxConfigVocab},
                                {"hidden_size", c.hidden_size, 1, kMaxConfigWidth},
                                {"intermediate_size", c.intermediate_size, 1, kMaxConfigWidth},
                                {"num_hidden_layers", c.num_hidden_layers, 1, kMaxConfigLayers},
                                {"num_attention_heads", c.num_attention_heads, 1, kMaxConfigHeads},
                                {"num_key_value_heads", c.num_key_value_heads, 1, kMaxConfigHeads},
                                {"head_dim", c.head_dim, 1, kMaxConfigHeadDim},
                                {"max_position_embeddings", max_position_embeddings, 1, kMaxConfigPositions}}));
  if (c.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(c.name, " config: head_dim is ", c.head_dim, ", expected an even number (RoPE pairs)"));
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(c.name, " config: num_attention_heads ", c.num_attention_heads,
                                                   " is not a multiple of num_key_value_heads ",
                                                   c.num_key_value_heads));
  }
  const std::array<int64_t, 3>& s = c.mrope.sections;
  if (s[0] < 0 || s[1] < 0 || s[2] < 0 || s[0] + s[1] + s[2] != c.head_dim / 2) {
    return absl::InvalidArgumentError(absl::StrCat(c.name, " config: rope_scaling.mrope_section is [", s[0], ", ", s[1],
                                                   ", ", s[2], "], expected non-negative sections summing to ",
                                                   "head_dim / 2 = ", c.head_dim / 2));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real(c.name, "rope_theta", c.rope_theta));
  return check_positive_real(c.name, "rms_norm_eps", c.rms_norm_eps);
}

std::optional<std::string> qwen_vl_canonical_name(absl::string_view name,
                                                  const std::vector<absl::string_view>& prefixes) {
  for (absl::string_view dropped : {"visual.", "model.visual.", "lm_head."}) {
    if (absl::StartsWith(name, dropped)) return std::nullopt;
  }
  for (absl::string_view prefix : prefixes) {
    if (absl::ConsumePrefix(&name, prefix)) break;
  }
  return std::string(name);
}

absl::StatusOr<FoundTokenizer> find_qwen_vl_tokenizer(const Checkpoint& checkpoint) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& folder : tokenizer_folders(checkpoint)) {
    const fs::path dir(folder);
    if (!fs::exists(dir / "tokenizer.json", ec) && !fs::exists(dir / "vocab.json", ec)) continue;
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> tokenizer, load_tokenizer(folder));
    return FoundTokenizer{std::move(tokenizer), absl::StrCat("tokenizer from ", folder)};
  }
  return FoundTokenizer{nullptr, "no tokenizer found"};
}

}  // namespace diffusiond
