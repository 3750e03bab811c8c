#include "core/models/qwen3/qwen3_config.h"

#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

bool present(const json& root, const char* field) {
  return root.contains(field) && !root.at(field).is_null();
}

// Parse order is table order, so the first bad field is the one reported.
// rope_theta is read with rope_parameters (read_rope).
constexpr ConfigField<Qwen3Config> kQwen3Fields[] = {
    {"vocab_size", &Qwen3Config::vocab_size},
    {"hidden_size", &Qwen3Config::hidden_size},
    {"intermediate_size", &Qwen3Config::intermediate_size},
    {"num_hidden_layers", &Qwen3Config::num_hidden_layers},
    {"num_attention_heads", &Qwen3Config::num_attention_heads},
    {"num_key_value_heads", &Qwen3Config::num_key_value_heads},
    {"head_dim", &Qwen3Config::head_dim},
    {"max_position_embeddings", &Qwen3Config::max_position_embeddings},
    {"rms_norm_eps", &Qwen3Config::rms_norm_eps},
};

absl::Status check_identity(const json& root, absl::string_view what) {
  if (!root.contains("model_type") || root.at("model_type") != json("qwen3")) {
    return json_field_error(what, "model_type", root.value("model_type", json()), "\"qwen3\"");
  }
  if (!present(root, "architectures")) return absl::OkStatus();
  const json& archs = root.at("architectures");
  bool ok = archs.is_array() && !archs.empty();
  for (const json& a : ok ? archs : json::array()) {
    ok = ok && (a == json("Qwen3ForCausalLM") || a == json("Qwen3Model"));
  }
  if (!ok) {
    return json_field_error(what, "architectures", archs,
                       "[\"Qwen3ForCausalLM\"] or [\"Qwen3Model\"] (other heads are not supported)");
  }
  return absl::OkStatus();
}

// The rotary embedding: plain RoPE only. transformers 4.x writes rope_theta
// and rope_scaling; 5.x writes rope_parameters {rope_type, rope_theta}.
absl::Status read_rope(const json& root, absl::string_view what, Qwen3Config* c) {
  if (present(root, "rope_scaling")) {
    return json_field_error(what, "rope_scaling", root.at("rope_scaling"),
                       "null (RoPE scaling is not supported)");
  }
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "rope_theta", what, &c->rope_theta));
  if (!present(root, "rope_parameters")) return absl::OkStatus();
  const json& rope = root.at("rope_parameters");
  if (!rope.is_object() || rope.value("rope_type", json("default")) != json("default")) {
    return json_field_error(what, "rope_parameters", rope,
                       "an object with rope_type \"default\" (RoPE scaling is not supported)");
  }
  return read_json_field(rope, "rope_theta", absl::StrCat(what, ": rope_parameters"), &c->rope_theta);
}

absl::Status check_unsupported(const json& root, absl::string_view what) {
  if (present(root, "attention_bias") && root.at("attention_bias") != json(false)) {
    return json_field_error(what, "attention_bias", root.at("attention_bias"),
                       "false (Qwen3 projections have no biases)");
  }
  if (present(root, "use_sliding_window") && root.at("use_sliding_window") != json(false)) {
    return json_field_error(what, "use_sliding_window", root.at("use_sliding_window"),
                       "false (sliding-window attention is not supported)");
  }
  if (present(root, "layer_types")) {
    const json& types = root.at("layer_types");
    bool ok = types.is_array();
    for (const json& t : ok ? types : json::array()) ok = ok && t == json("full_attention");
    if (!ok) return json_field_error(what, "layer_types", types, "\"full_attention\" for every layer");
  }
  if (present(root, "hidden_act") && root.at("hidden_act") != json("silu")) {
    return json_field_error(what, "hidden_act", root.at("hidden_act"), "\"silu\"");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Qwen3Config::validate() const {
  // Bounds first: the counts size the parameter table and the RoPE table.
  DIFFUSIOND_RETURN_IF_ERROR(check_int_fields(
      "Qwen3", {{"vocab_size", vocab_size, 1, kMaxConfigVocab},
                {"hidden_size", hidden_size, 1, kMaxConfigWidth},
                {"intermediate_size", intermediate_size, 1, kMaxConfigWidth},
                {"num_hidden_layers", num_hidden_layers, 1, kMaxConfigLayers},
                {"num_attention_heads", num_attention_heads, 1, kMaxConfigHeads},
                {"num_key_value_heads", num_key_value_heads, 1, kMaxConfigHeads},
                {"head_dim", head_dim, 1, kMaxConfigHeadDim},
                {"max_position_embeddings", max_position_embeddings, 1, kMaxConfigPositions}}));
  if (head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Qwen3 config: head_dim is ", head_dim, ", expected an even number (RoPE pairs)"));
  }
  if (num_attention_heads % num_key_value_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Qwen3 config: num_attention_heads ", num_attention_heads,
        " is not a multiple of num_key_value_heads ", num_key_value_heads));
  }
  if (!(rope_theta > 0) || !(rms_norm_eps > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("Qwen3 config: rope_theta ", rope_theta,
                                                   " and rms_norm_eps ", rms_norm_eps,
                                                   " must be positive"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Qwen3", "rope_theta", rope_theta));
  return check_positive_real("Qwen3", "rms_norm_eps", rms_norm_eps);
}

absl::StatusOr<Qwen3Config> parse_qwen3_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return qwen3_config_from_json(root, what);
}

absl::StatusOr<Qwen3Config> qwen3_config_from_json(const nlohmann::json& root, absl::string_view what) {
  if (!root.is_object()) return absl::InvalidArgumentError(absl::StrCat(what, ": not a JSON object"));
  DIFFUSIOND_RETURN_IF_ERROR(check_identity(root, what));
  DIFFUSIOND_RETURN_IF_ERROR(check_unsupported(root, what));
  Qwen3Config c;
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kQwen3Fields, &c));
  // Absent or null: one KV head per query head.
  if (root.value("num_key_value_heads", json()).is_null()) c.num_key_value_heads = c.num_attention_heads;
  DIFFUSIOND_RETURN_IF_ERROR(read_rope(root, what, &c));
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return c;
}

nlohmann::json to_json(const Qwen3Config& config) {
  json root = {{"model_type", "qwen3"}, {"architectures", {"Qwen3ForCausalLM"}}};
  write_config_fields(config, kQwen3Fields, &root);
  root["rope_theta"] = config.rope_theta;
  root["rope_scaling"] = nullptr;
  root["attention_bias"] = false;
  root["hidden_act"] = "silu";
  return root;
}

}  // namespace diffusiond
