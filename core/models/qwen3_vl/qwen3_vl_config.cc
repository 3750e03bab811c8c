#include "core/models/qwen3_vl/qwen3_vl_config.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/config_fields.h"
#include "core/models/common/qwen_vl_config.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr absl::string_view kModelType = "qwen3_vl";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<Qwen3VlConfig> kQwen3VlFields[] = {
    {"vocab_size", &Qwen3VlConfig::vocab_size},
    {"hidden_size", &Qwen3VlConfig::hidden_size},
    {"intermediate_size", &Qwen3VlConfig::intermediate_size},
    {"num_hidden_layers", &Qwen3VlConfig::num_hidden_layers},
    {"num_attention_heads", &Qwen3VlConfig::num_attention_heads},
    {"num_key_value_heads", &Qwen3VlConfig::num_key_value_heads},
    {"head_dim", &Qwen3VlConfig::head_dim},
    {"max_position_embeddings", &Qwen3VlConfig::max_position_embeddings},
    {"rope_theta", &Qwen3VlConfig::rope_theta},
    {"rms_norm_eps", &Qwen3VlConfig::rms_norm_eps},
    {"attention_bias", &Qwen3VlConfig::attention_bias},
};

}  // namespace

QwenTowerSpec Qwen3VlConfig::tower_spec() const {
  QwenTowerSpec s;
  s.name = "Qwen3-VL";
  s.vocab_size = vocab_size;
  s.hidden_size = hidden_size;
  s.intermediate_size = intermediate_size;
  s.num_hidden_layers = num_hidden_layers;
  s.num_attention_heads = num_attention_heads;
  s.num_key_value_heads = num_key_value_heads;
  s.head_dim = head_dim;
  s.rope_theta = rope_theta;
  s.rms_norm_eps = rms_norm_eps;
  s.mrope.sections = mrope_section;
  s.mrope.interleaved = true;
  s.qk_norm = true;
  s.qkv_bias = attention_bias;
  s.o_bias = attention_bias;
  s.positions_count_tokens = true;
  return s;
}

absl::Status Qwen3VlConfig::validate() const { return validate_qwen_tower(tower_spec(), max_position_embeddings); }

absl::StatusOr<Qwen3VlConfig> qwen3_vl_config_from_json(const json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(
      check_qwen_vl_identity(root, what, kModelType, {"Qwen3VLModel", "Qwen3VLForConditionalGeneration"}));
  const json& text = qwen_vl_text_fields(root);
  DIFFUSIOND_RETURN_IF_ERROR(check_qwen_vl_unsupported(text, what));
  Qwen3VlConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(text, what, kQwen3VlFields, &c));
  // Absent or null: one KV head per query head.
  if (text.value("num_key_value_heads", json()).is_null()) c.num_key_value_heads = c.num_attention_heads;
  DIFFUSIOND_RETURN_IF_ERROR(
      read_mrope_scaling(text, what, /*required=*/true, /*allow_interleaved=*/true, &c.mrope_section));
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return c;
}

absl::StatusOr<Qwen3VlConfig> parse_qwen3_vl_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return qwen3_vl_config_from_json(root, what);
}

json to_json(const Qwen3VlConfig& config) {
  json text = {{"model_type", "qwen3_vl_text"}};
  write_config_fields(config, kQwen3VlFields, &text);
  text["rope_scaling"] = {
      {"rope_type", "default"}, {"mrope_interleaved", true}, {"mrope_section", config.mrope_section}};
  text["hidden_act"] = "silu";
  return {{"model_type", std::string(kModelType)}, {"architectures", {"Qwen3VLModel"}}, {"text_config", text}};
}

}  // namespace diffusiond
