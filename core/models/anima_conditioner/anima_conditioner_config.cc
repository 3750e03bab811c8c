#include "core/models/anima_conditioner/anima_conditioner_config.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr char kAnimaConditionerClassName[] = "AnimaTextConditioner";

constexpr ConfigField<AnimaConditionerConfig> kAnimaConditionerFields[] = {
    {"source_dim", &AnimaConditionerConfig::source_dim},
    {"target_dim", &AnimaConditionerConfig::target_dim},
    {"model_dim", &AnimaConditionerConfig::model_dim},
    {"num_layers", &AnimaConditionerConfig::num_layers},
    {"num_attention_heads", &AnimaConditionerConfig::num_attention_heads},
    {"mlp_ratio", &AnimaConditionerConfig::mlp_ratio},
    {"target_vocab_size", &AnimaConditionerConfig::target_vocab_size},
    {"use_self_attention", &AnimaConditionerConfig::use_self_attention},
    {"use_layer_norm", &AnimaConditionerConfig::use_layer_norm},
    {"min_sequence_length", &AnimaConditionerConfig::min_sequence_length},
};

}  // namespace

absl::Status AnimaConditionerConfig::validate() const {
  DIFFUSIOND_RETURN_IF_ERROR(check_int_fields(
      "AnimaTextConditioner", {{"source_dim", source_dim, 1, kMaxConfigWidth},
                               {"target_dim", target_dim, 1, kMaxConfigWidth},
                               {"model_dim", model_dim, 1, kMaxConfigWidth},
                               {"num_layers", num_layers, 1, kMaxConfigLayers},
                               {"num_attention_heads", num_attention_heads, 1, kMaxConfigHeads},
                               {"target_vocab_size", target_vocab_size, 1, kMaxConfigVocab},
                               {"min_sequence_length", min_sequence_length, 0, kMaxConfigPositions}}));
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("AnimaTextConditioner", "mlp_ratio", mlp_ratio));
  if (model_dim % num_attention_heads != 0 || head_dim() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("AnimaTextConditioner config: model_dim ", model_dim,
                                                   " must split into num_attention_heads ", num_attention_heads,
                                                   " heads of an even width (rotate-half RoPE)"));
  }
  if (mlp_dim() < 1 || mlp_dim() > kMaxConfigWidth) {
    return absl::InvalidArgumentError(absl::StrCat("AnimaTextConditioner config: the MLP width ", mlp_dim(),
                                                   " (model_dim * mlp_ratio ", mlp_ratio, ") must lie in [1, ",
                                                   kMaxConfigWidth, "]"));
  }
  return absl::OkStatus();
}

std::string AnimaConditionerConfig::describe() const {
  return absl::StrCat("AnimaTextConditioner: ", num_layers, " blocks, ", num_attention_heads, " heads x ", head_dim(),
                      ", source_dim ", source_dim, ", target_dim ", target_dim, ", model_dim ", model_dim,
                      ", mlp_ratio ", mlp_ratio, ", vocabulary ", target_vocab_size,
                      use_self_attention ? ", self-attention" : ", no self-attention",
                      use_layer_norm ? ", LayerNorm" : ", RMSNorm", ", padded to ", min_sequence_length, " rows");
}

absl::StatusOr<AnimaConditionerConfig> parse_anima_conditioner_config(absl::string_view text,
                                                                      absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return anima_conditioner_config_from_json(root, what);
}

absl::StatusOr<AnimaConditionerConfig> anima_conditioner_config_from_json(const nlohmann::json& root,
                                                                          absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(check_config_class(root, what, kAnimaConditionerClassName));
  AnimaConditionerConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kAnimaConditionerFields, &c));
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

nlohmann::json to_json(const AnimaConditionerConfig& config) {
  json root = {{"_class_name", kAnimaConditionerClassName}};
  write_config_fields(config, kAnimaConditionerFields, &root);
  return root;
}

absl::StatusOr<AnimaConditionerConfig> infer_anima_conditioner_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto need = [&](absl::string_view name, size_t rank) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": cannot infer the AnimaTextConditioner config: tensor '", name, "' is missing or not of rank ", rank));
    }
    return *shape;
  };
  AnimaConditionerConfig c;
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> embed, need("embed.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> k, need("blocks.0.cross_attn.k_proj.weight", 2));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> q_norm, need("blocks.0.cross_attn.q_norm.weight", 1));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> mlp, need("blocks.0.mlp.0.weight", 2));
  c.target_vocab_size = embed[0];
  c.target_dim = embed[1];
  c.model_dim = k[0];
  c.source_dim = k[1];
  c.num_attention_heads = q_norm[0] > 0 ? c.model_dim / q_norm[0] : 0;
  c.num_layers = count_indexed_blocks(names, "blocks.");
  c.mlp_ratio = static_cast<double>(mlp[0]) / static_cast<double>(c.model_dim);
  c.use_self_attention = shape_of("blocks.0.self_attn.q_proj.weight").has_value();
  c.use_layer_norm = shape_of("blocks.0.norm_cross_attn.bias").has_value();
  if (c.num_attention_heads * q_norm[0] != c.model_dim || c.mlp_dim() != mlp[0]) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the adapter's width ", c.model_dim,
                                                   " does not split into heads of q_norm's ", q_norm[0],
                                                   ", or its MLP width ", mlp[0], " is not a ratio of it"));
  }
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

}  // namespace diffusiond
