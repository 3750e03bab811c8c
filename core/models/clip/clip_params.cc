#include "core/models/clip/clip_params.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace diffusiond {
namespace {

// Where a bundle keeps its CLIP-L text encoder; "" for the model's own file.
constexpr absl::string_view kPrefixes[] = {"", "cond_stage_model.transformer.", "conditioner.embedders.0.transformer.",
                                           "text_encoders.clip_l.transformer."};

constexpr absl::string_view kTokenEmbedding = "text_model.embeddings.token_embedding.weight";

// The tensors a CLIP text file may hold that the model does not use.
bool dropped(absl::string_view name) { return name == "text_model.embeddings.position_ids" || name == "logit_scale"; }

// The prefix `name` starts with: a bundle's if any (they exclude each
// other), else the empty one.
absl::string_view prefix_of(absl::string_view name) {
  for (const absl::string_view prefix : kPrefixes) {
    if (!prefix.empty() && absl::StartsWith(name, prefix)) return prefix;
  }
  return "";
}

}  // namespace

std::vector<ParamSpec> clip_parameter_table(const ClipTextConfig& c) {
  const int64_t d = c.hidden_size, ff = c.intermediate_size;
  const ParamKind W = ParamKind::kLayerWeight, B = ParamKind::kBias, N = ParamKind::kNormWeight;
  std::vector<ParamSpec> t = {{std::string(kTokenEmbedding), {c.vocab_size, d}, W},
                              {"text_model.embeddings.position_embedding.weight", {c.max_position_embeddings, d}, W}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat("text_model.encoder.layers.", i, ".");
    for (const char* proj : {"k_proj", "v_proj", "q_proj", "out_proj"}) {
      t.push_back({absl::StrCat(p, "self_attn.", proj, ".weight"), {d, d}, W});
      t.push_back({absl::StrCat(p, "self_attn.", proj, ".bias"), {d}, B});
    }
    t.push_back({p + "layer_norm1.weight", {d}, N});
    t.push_back({p + "layer_norm1.bias", {d}, B});
    t.push_back({p + "mlp.fc1.weight", {ff, d}, W});
    t.push_back({p + "mlp.fc1.bias", {ff}, B});
    t.push_back({p + "mlp.fc2.weight", {d, ff}, W});
    t.push_back({p + "mlp.fc2.bias", {d}, B});
    t.push_back({p + "layer_norm2.weight", {d}, N});
    t.push_back({p + "layer_norm2.bias", {d}, B});
  }
  t.push_back({"text_model.final_layer_norm.weight", {d}, N});
  t.push_back({"text_model.final_layer_norm.bias", {d}, B});
  if (c.with_projection) t.push_back({"text_projection.weight", {c.projection_dim, d}, W});
  return t;
}

PrecisionDeclaration clip_precision_declaration() {
  PrecisionDeclaration d;
  // The layer norms match the default "norm" pattern. The embedding tables
  // are rank 2 (layer weights by kind), so they need naming, and the
  // projection that makes the pooled vector is kept exact too.
  d.skip_patterns = {"^text_model\\.embeddings\\.", "^text_projection$"};
  return d;
}

std::optional<std::string> clip_canonical_name(absl::string_view name, bool keep_projection) {
  absl::ConsumePrefix(&name, prefix_of(name));
  if (dropped(name) || (name == "text_projection.weight" && !keep_projection)) return std::nullopt;
  return std::string(name);
}

bool is_clip_text_checkpoint(const std::vector<std::string>& names) {
  std::optional<absl::string_view> prefix;
  for (const std::string& name : names) {
    const absl::string_view p = prefix_of(name);
    if (absl::string_view(name).substr(p.size()) == kTokenEmbedding) prefix = p;
  }
  if (!prefix.has_value()) return false;
  bool final_norm = false;
  for (const std::string& full : names) {
    absl::string_view name = full;
    if (!absl::ConsumePrefix(&name, *prefix)) return false;
    final_norm = final_norm || name == "text_model.final_layer_norm.weight";
    if (!absl::StartsWith(name, "text_model.") && name != "text_projection.weight" && !dropped(name)) return false;
  }
  return final_norm;
}

}  // namespace diffusiond
