#include "core/models/t5/t5_config.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

bool present(const json& root, const char* field) { return root.contains(field) && !root.at(field).is_null(); }

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<T5Config> kT5Fields[] = {
    {"vocab_size", &T5Config::vocab_size},
    {"d_model", &T5Config::d_model},
    {"d_kv", &T5Config::d_kv},
    {"d_ff", &T5Config::d_ff},
    {"num_layers", &T5Config::num_layers},
    {"num_heads", &T5Config::num_heads},
    {"relative_attention_num_buckets", &T5Config::relative_attention_num_buckets},
    {"relative_attention_max_distance", &T5Config::relative_attention_max_distance},
    {"layer_norm_epsilon", &T5Config::layer_norm_epsilon},
};

absl::Status check_architectures(const json& root, absl::string_view what, bool umt5) {
  if (!present(root, "architectures")) return absl::OkStatus();
  const std::string prefix = umt5 ? "UMT5" : "T5";
  const std::vector<std::string> allowed = {prefix + "EncoderModel", prefix + "Model",
                                            prefix + "ForConditionalGeneration"};
  const json& archs = root.at("architectures");
  bool ok = archs.is_array() && !archs.empty();
  for (const json& a : ok ? archs : json::array()) {
    bool known = false;
    for (const std::string& name : allowed) known = known || a == json(name);
    ok = ok && known;
  }
  if (!ok) {
    return json_field_error(what, "architectures", archs,
                            absl::StrCat("[\"", allowed[0], "\"], [\"", allowed[1], "\"] or [\"", allowed[2],
                                         "\"] (only the encoder is run)"));
  }
  return absl::OkStatus();
}

// feed_forward_proj, and the fields transformers derives from it (a
// config.json written by save_pretrained carries them too, and they win
// over the derivation when loaded, so they must agree).
absl::Status read_feed_forward(const json& root, absl::string_view what, T5Config* c) {
  std::string proj = c->feed_forward == T5FeedForward::kGatedGelu ? "gated-gelu" : "relu";
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "feed_forward_proj", what, &proj));
  if (proj == "relu") {
    c->feed_forward = T5FeedForward::kRelu;
  } else if (proj == "gated-gelu") {
    c->feed_forward = T5FeedForward::kGatedGelu;
  } else {
    return json_field_error(what, "feed_forward_proj", root.at("feed_forward_proj"),
                            "\"gated-gelu\" or \"relu\" (other activations are not supported)");
  }
  const bool gated = c->feed_forward == T5FeedForward::kGatedGelu;
  if (present(root, "is_gated_act") && root.at("is_gated_act") != json(gated)) {
    return json_field_error(what, "is_gated_act", root.at("is_gated_act"),
                            absl::StrCat(gated ? "true" : "false", " (feed_forward_proj is \"", proj, "\")"));
  }
  if (present(root, "dense_act_fn")) {
    const json& act = root.at("dense_act_fn");
    // ComfyUI's configs name the tanh GELU by torch's name.
    const bool ok = gated ? act == json("gelu_new") || act == json("gelu_pytorch_tanh") : act == json("relu");
    if (!ok) {
      return json_field_error(what, "dense_act_fn", act,
                              absl::StrCat(gated ? "\"gelu_new\"" : "\"relu\"", " (feed_forward_proj is \"", proj,
                                           "\")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view t5_feed_forward_name(T5FeedForward f) {
  switch (f) {
    case T5FeedForward::kRelu: return "relu";
    case T5FeedForward::kGatedGelu: return "gated-gelu";
  }
  return "unknown";
}

std::string T5Config::describe() const {
  return absl::StrCat(name(), " encoder: d_model ", d_model, ", ", num_layers, " blocks, ", num_heads, " heads of ",
                      d_kv, ", d_ff ", d_ff, " (", t5_feed_forward_name(feed_forward), "), vocab ", vocab_size,
                      ", ", relative_attention_num_buckets, " position buckets to distance ",
                      relative_attention_max_distance, umt5 ? " (per block)" : " (block 0, shared)");
}

absl::Status T5Config::validate() const {
  DIFFUSIOND_RETURN_IF_ERROR(check_int_fields(
      name(), {{"vocab_size", vocab_size, 1, kMaxConfigVocab},
               {"d_model", d_model, 1, kMaxConfigWidth},
               {"d_kv", d_kv, 1, kMaxConfigHeadDim},
               {"d_ff", d_ff, 1, kMaxConfigWidth},
               {"num_layers", num_layers, 1, kMaxConfigLayers},
               {"num_heads", num_heads, 1, kMaxConfigHeads},
               {"relative_attention_num_buckets", relative_attention_num_buckets, 4, kMaxConfigPositions},
               {"relative_attention_max_distance", relative_attention_max_distance, 1, kMaxConfigPositions}}));
  if (inner_dim() > kMaxConfigWidth) {
    return absl::InvalidArgumentError(absl::StrCat(name(), " config: num_heads * d_kv is ", inner_dim(),
                                                   ", expected at most ", kMaxConfigWidth));
  }
  // Past the exact buckets the bucket grows with log(n / exact) /
  // log(max_distance / exact): the ratio must exceed 1.
  const int64_t exact = relative_attention_num_buckets / 2 / 2;
  if (relative_attention_max_distance <= exact) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), " config: relative_attention_max_distance is ", relative_attention_max_distance,
        ", expected more than relative_attention_num_buckets / 4 = ", exact));
  }
  return check_positive_real(name(), "layer_norm_epsilon", layer_norm_epsilon);
}

absl::StatusOr<T5Config> parse_t5_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return t5_config_from_json(root, what);
}

absl::StatusOr<T5Config> t5_config_from_json(const nlohmann::json& root, absl::string_view what) {
  if (!root.is_object()) return absl::InvalidArgumentError(absl::StrCat(what, ": not a JSON object"));
  const json type = root.value("model_type", json());
  if (type != json("t5") && type != json("umt5")) {
    return json_field_error(what, "model_type", type, "\"t5\" or \"umt5\"");
  }
  T5Config c;
  if (type == json("umt5")) {
    // UMT5Config's defaults.
    c.umt5 = true;
    c.vocab_size = 250112;
    c.d_ff = 1024;
    c.num_layers = 8;
    c.num_heads = 6;
    c.feed_forward = T5FeedForward::kGatedGelu;
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_architectures(root, what, c.umt5));
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kT5Fields, &c));
  DIFFUSIOND_RETURN_IF_ERROR(read_feed_forward(root, what, &c));
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return c;
}

nlohmann::json to_json(const T5Config& config) {
  const bool gated = config.feed_forward == T5FeedForward::kGatedGelu;
  json root = {{"model_type", config.umt5 ? "umt5" : "t5"}};
  root["architectures"] = {absl::StrCat(config.name(), "EncoderModel")};
  write_config_fields(config, kT5Fields, &root);
  root["feed_forward_proj"] = std::string(t5_feed_forward_name(config.feed_forward));
  root["dense_act_fn"] = gated ? "gelu_new" : "relu";
  root["is_gated_act"] = gated;
  return root;
}

}  // namespace diffusiond
