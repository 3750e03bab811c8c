#include "core/models/clip/clip_config.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr int64_t kInferredHeadDim = 64;

constexpr char kClipModelType[] = "clip_text_model";
constexpr char kClipPlain[] = "CLIPTextModel";
constexpr char kClipProjected[] = "CLIPTextModelWithProjection";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<ClipTextConfig> kClipFields[] = {
    {"vocab_size", &ClipTextConfig::vocab_size},
    {"hidden_size", &ClipTextConfig::hidden_size},
    {"intermediate_size", &ClipTextConfig::intermediate_size},
    {"projection_dim", &ClipTextConfig::projection_dim},
    {"num_hidden_layers", &ClipTextConfig::num_hidden_layers},
    {"num_attention_heads", &ClipTextConfig::num_attention_heads},
    {"max_position_embeddings", &ClipTextConfig::max_position_embeddings},
    {"layer_norm_eps", &ClipTextConfig::layer_norm_eps},
    {"eos_token_id", &ClipTextConfig::eos_token_id},
};

bool present(const json& root, const char* field) { return root.contains(field) && !root.at(field).is_null(); }

absl::Status check_identity(const json& root, absl::string_view what, ClipTextConfig* c) {
  if (!root.contains("model_type") || root.at("model_type") != json(kClipModelType)) {
    return json_field_error(what, "model_type", root.value("model_type", json()), "\"clip_text_model\"");
  }
  if (!present(root, "architectures")) return absl::OkStatus();
  const json& archs = root.at("architectures");
  const bool plain = archs == json::array({kClipPlain});
  const bool projected = archs == json::array({kClipProjected});
  if (!plain && !projected) {
    return json_field_error(what, "architectures", archs, "[\"CLIPTextModel\"] or [\"CLIPTextModelWithProjection\"]");
  }
  c->with_projection = projected;
  return absl::OkStatus();
}

absl::Status read_activation(const json& root, absl::string_view what, ClipTextConfig* c) {
  std::string name = "quick_gelu";
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "hidden_act", what, &name));
  if (name == "quick_gelu") {
    c->hidden_act = ClipActivation::kQuickGelu;
  } else if (name == "gelu") {
    c->hidden_act = ClipActivation::kGelu;
  } else if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
    c->hidden_act = ClipActivation::kGeluTanh;
  } else {
    return json_field_error(what, "hidden_act", root.at("hidden_act"),
                            "\"quick_gelu\", \"gelu\", \"gelu_new\" or \"gelu_pytorch_tanh\"");
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view clip_activation_name(ClipActivation activation) {
  switch (activation) {
    case ClipActivation::kQuickGelu:
      return "quick_gelu";
    case ClipActivation::kGelu:
      return "gelu";
    case ClipActivation::kGeluTanh:
      return "gelu_pytorch_tanh";
  }
  return "unknown";
}

absl::Status ClipTextConfig::validate() const {
  DIFFUSIOND_RETURN_IF_ERROR(
      check_int_fields("CLIP text", {{"vocab_size", vocab_size, 1, kMaxConfigVocab},
                                     {"hidden_size", hidden_size, 1, kMaxConfigWidth},
                                     {"intermediate_size", intermediate_size, 1, kMaxConfigWidth},
                                     {"projection_dim", projection_dim, 1, kMaxConfigWidth},
                                     {"num_hidden_layers", num_hidden_layers, 1, kMaxConfigLayers},
                                     {"num_attention_heads", num_attention_heads, 1, kMaxConfigHeads},
                                     {"max_position_embeddings", max_position_embeddings, 1, kMaxConfigPositions},
                                     {"eos_token_id", eos_token_id, 0, kMaxConfigVocab}}));
  if (hidden_size % num_attention_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("CLIP text config: hidden_size ", hidden_size,
                                                   " is not a multiple of num_attention_heads ", num_attention_heads));
  }
  if (head_dim() > kMaxConfigHeadDim) {
    return absl::InvalidArgumentError(absl::StrCat("CLIP text config: head_dim (hidden_size / num_attention_heads) is ",
                                                   head_dim(), ", expected at most ", kMaxConfigHeadDim));
  }
  return check_positive_real("CLIP text", "layer_norm_eps", layer_norm_eps);
}

std::string ClipTextConfig::describe() const {
  std::string out =
      absl::StrCat("CLIP text: hidden ", hidden_size, ", ", num_hidden_layers, " layers, ", num_attention_heads,
                   " heads of ", head_dim(), ", intermediate ", intermediate_size, ", vocab ", vocab_size, ", ",
                   max_position_embeddings, " positions, ", clip_activation_name(hidden_act), ", pooled at ");
  absl::StrAppend(
      &out, pools_at_largest_id() ? "the largest id (eos_token_id 2)" : absl::StrCat("the first id ", eos_token_id));
  if (with_projection) absl::StrAppend(&out, ", text_projection to ", projection_dim);
  return out;
}

absl::StatusOr<ClipTextConfig> parse_clip_text_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return clip_text_config_from_json(root, what);
}

absl::StatusOr<ClipTextConfig> clip_text_config_from_json(const nlohmann::json& root, absl::string_view what) {
  if (!root.is_object()) return absl::InvalidArgumentError(absl::StrCat(what, ": not a JSON object"));
  ClipTextConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(check_identity(root, what, &c));
  DIFFUSIOND_RETURN_IF_ERROR(read_activation(root, what, &c));
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kClipFields, &c));
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

nlohmann::json to_json(const ClipTextConfig& config) {
  json root = {{"model_type", kClipModelType}};
  root["architectures"] = {config.with_projection ? kClipProjected : kClipPlain};
  root["hidden_act"] = std::string(clip_activation_name(config.hidden_act));
  write_config_fields(config, kClipFields, &root);
  return root;
}

absl::StatusOr<ClipTextConfig> infer_clip_text_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto matrix = [&](absl::string_view name) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the CLIP text config: tensor '", name,
                                                     shape.has_value() ? "' is not a matrix" : "' is missing"));
    }
    return *shape;
  };
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> tokens,
                              matrix("text_model.embeddings.token_embedding.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> positions,
                              matrix("text_model.embeddings.position_embedding.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> fc1, matrix("text_model.encoder.layers.0.mlp.fc1.weight"));
  ClipTextConfig c;
  c.vocab_size = tokens[0];
  c.hidden_size = tokens[1];
  c.max_position_embeddings = positions[0];
  c.intermediate_size = fc1[0];
  c.projection_dim = c.hidden_size;
  c.num_hidden_layers = count_indexed_blocks(names, "text_model.encoder.layers.");
  if (c.hidden_size % kInferredHeadDim != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the CLIP text heads: width ", c.hidden_size,
                                                   " is not a multiple of ", kInferredHeadDim, "; name a config.json"));
  }
  c.num_attention_heads = c.hidden_size / kInferredHeadDim;
  // OpenAI's towers (512, 768) use quick_gelu; OpenCLIP's (ViT-H 1024,
  // bigG 1280) the erf gelu.
  c.hidden_act = c.hidden_size >= 1024 ? ClipActivation::kGelu : ClipActivation::kQuickGelu;
  c.eos_token_id = 2;
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

}  // namespace diffusiond
