#include "core/models/qwen25_vl/qwen25_vl_config.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/config_fields.h"
#include "core/models/common/qwen_vl_config.h"
#include "core/models/config_limits.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr absl::string_view kModelType = "qwen2_5_vl";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<Qwen25VlConfig> kQwen25VlFields[] = {
    {"vocab_size", &Qwen25VlConfig::vocab_size},
    {"hidden_size", &Qwen25VlConfig::hidden_size},
    {"intermediate_size", &Qwen25VlConfig::intermediate_size},
    {"num_hidden_layers", &Qwen25VlConfig::num_hidden_layers},
    {"num_attention_heads", &Qwen25VlConfig::num_attention_heads},
    {"num_key_value_heads", &Qwen25VlConfig::num_key_value_heads},
    {"max_position_embeddings", &Qwen25VlConfig::max_position_embeddings},
    {"rope_theta", &Qwen25VlConfig::rope_theta},
    {"rms_norm_eps", &Qwen25VlConfig::rms_norm_eps},
};

}  // namespace

QwenTowerSpec Qwen25VlConfig::tower_spec() const {
  QwenTowerSpec s;
  s.name = "Qwen2.5-VL";
  s.vocab_size = vocab_size;
  s.hidden_size = hidden_size;
  s.intermediate_size = intermediate_size;
  s.num_hidden_layers = num_hidden_layers;
  s.num_attention_heads = num_attention_heads;
  s.num_key_value_heads = num_key_value_heads;
  s.head_dim = num_attention_heads > 0 ? head_dim() : 0;
  s.rope_theta = rope_theta;
  s.rms_norm_eps = rms_norm_eps;
  s.mrope.sections = mrope_section;
  s.mrope.interleaved = false;
  s.qkv_bias = true;
  s.positions_count_tokens = true;
  return s;
}

absl::Status Qwen25VlConfig::validate() const {
  if (num_attention_heads > 0 && hidden_size % num_attention_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Qwen2.5-VL config: hidden_size ", hidden_size,
                                                   " is not a multiple of num_attention_heads ", num_attention_heads,
                                                   " (head_dim is their quotient)"));
  }
  return validate_qwen_tower(tower_spec(), max_position_embeddings);
}

absl::StatusOr<Qwen25VlConfig> qwen25_vl_config_from_json(const json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(
      check_qwen_vl_identity(root, what, kModelType, {"Qwen2_5_VLForConditionalGeneration", "Qwen2_5_VLModel"}));
  const json& text = qwen_vl_text_fields(root);
  DIFFUSIOND_RETURN_IF_ERROR(check_qwen_vl_unsupported(text, what));
  Qwen25VlConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(text, what, kQwen25VlFields, &c));
  // Absent or null: one KV head per query head.
  if (text.value("num_key_value_heads", json()).is_null()) c.num_key_value_heads = c.num_attention_heads;
  DIFFUSIOND_RETURN_IF_ERROR(
      read_mrope_scaling(text, what, /*required=*/true, /*allow_interleaved=*/false, &c.mrope_section));
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return c;
}

absl::StatusOr<Qwen25VlConfig> parse_qwen25_vl_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return qwen25_vl_config_from_json(root, what);
}

absl::StatusOr<Qwen25VlConfig> infer_qwen25_vl_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto matrix = [&](absl::string_view name) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the Qwen2.5-VL config: tensor '", name,
                                                     shape.has_value() ? "' is not a matrix" : "' is missing"));
    }
    return *shape;
  };
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> embedding, matrix("embed_tokens.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> gate, matrix("layers.0.mlp.gate_proj.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> k, matrix("layers.0.self_attn.k_proj.weight"));
  Qwen25VlConfig c;
  c.vocab_size = embedding[0];
  c.hidden_size = embedding[1];
  c.intermediate_size = gate[0];
  c.num_hidden_layers = count_indexed_blocks(names, "layers.");
  if (c.hidden_size % kQwen25VlInferredHeadDim != 0 || k[0] % kQwen25VlInferredHeadDim != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": cannot infer the Qwen2.5-VL heads: width ", c.hidden_size, " and k_proj's ", k[0],
        " rows are not both multiples of the head_dim ", kQwen25VlInferredHeadDim,
        " every released model has; name a config.json"));
  }
  c.num_attention_heads = c.hidden_size / kQwen25VlInferredHeadDim;
  c.num_key_value_heads = k[0] / kQwen25VlInferredHeadDim;
  c.mrope_section = {16, 24, 24};
  c.rope_theta = 1000000.0;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 128000;
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

json to_json(const Qwen25VlConfig& config) {
  json text = {{"model_type", "qwen2_5_vl_text"}};
  write_config_fields(config, kQwen25VlFields, &text);
  text["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", config.mrope_section}};
  text["hidden_act"] = "silu";
  text["use_sliding_window"] = false;
  return {{"model_type", std::string(kModelType)},
          {"architectures", {"Qwen2_5_VLForConditionalGeneration"}},
          {"text_config", text}};
}

}  // namespace diffusiond
