#include "core/models/t5/t5_params.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/config_limits.h"

namespace diffusiond {
namespace {

constexpr char kBias0[] = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight";
constexpr char kBias1[] = "encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight";
constexpr char kQ0[] = "encoder.block.0.layer.0.SelfAttention.q.weight";
constexpr char kWi0[] = "encoder.block.0.layer.1.DenseReluDense.wi_0.weight";
constexpr char kWi[] = "encoder.block.0.layer.1.DenseReluDense.wi.weight";

absl::Status cannot_infer(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": cannot infer the T5 config from the tensors (", why, "); name a config.json"));
}

std::string shape_string(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

std::vector<ParamSpec> t5_parameter_table(const T5Config& c) {
  const int64_t d = c.d_model, inner = c.inner_dim(), ff = c.d_ff;
  const ParamKind W = ParamKind::kLayerWeight, N = ParamKind::kNormWeight;
  std::vector<ParamSpec> t = {{std::string(kT5EmbeddingName), {c.vocab_size, d}, W}};
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string a = absl::StrCat("encoder.block.", i, ".layer.0.");
    const std::string f = absl::StrCat("encoder.block.", i, ".layer.1.");
    t.push_back({a + "SelfAttention.q.weight", {inner, d}, W});
    t.push_back({a + "SelfAttention.k.weight", {inner, d}, W});
    t.push_back({a + "SelfAttention.v.weight", {inner, d}, W});
    t.push_back({a + "SelfAttention.o.weight", {d, inner}, W});
    if (c.has_relative_bias(i)) {
      t.push_back({a + "SelfAttention.relative_attention_bias.weight",
                   {c.relative_attention_num_buckets, c.num_heads}, W});
    }
    t.push_back({a + "layer_norm.weight", {d}, N});
    if (c.feed_forward == T5FeedForward::kGatedGelu) {
      t.push_back({f + "DenseReluDense.wi_0.weight", {ff, d}, W});
      t.push_back({f + "DenseReluDense.wi_1.weight", {ff, d}, W});
    } else {
      t.push_back({f + "DenseReluDense.wi.weight", {ff, d}, W});
    }
    t.push_back({f + "DenseReluDense.wo.weight", {d, ff}, W});
    t.push_back({f + "layer_norm.weight", {d}, N});
  }
  t.push_back({"encoder.final_layer_norm.weight", {d}, N});
  return t;
}

PrecisionDeclaration t5_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {"^shared$", "relative_attention_bias$", "DenseReluDense\\.wo$"};
  return d;
}

std::optional<std::string> t5_canonical_name(absl::string_view name, bool has_shared) {
  if (absl::StartsWith(name, "decoder.") || absl::StartsWith(name, "lm_head.")) return std::nullopt;
  if (name == "encoder.embed_tokens.weight" || name == "embed_tokens.weight") {
    if (has_shared) return std::nullopt;
    return std::string(kT5EmbeddingName);
  }
  if (absl::StartsWith(name, "block.") || name == "final_layer_norm.weight") return absl::StrCat("encoder.", name);
  return std::string(name);
}

absl::StatusOr<T5Config> infer_t5_config(const T5ShapeLookup& shape_of, const std::vector<std::string>& names,
                                         absl::string_view what) {
  const auto rank2 = [&](absl::string_view name) -> std::optional<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> s = shape_of(name);
    return s.has_value() && s->size() == 2 ? s : std::nullopt;
  };
  T5Config c;
  const std::optional<std::vector<int64_t>> embedding = rank2(kT5EmbeddingName);
  if (!embedding) {
    return cannot_infer(what, "no 2-D token embedding 'shared.weight' or 'encoder.embed_tokens.weight'");
  }
  c.vocab_size = (*embedding)[0];
  c.d_model = (*embedding)[1];
  c.num_layers = count_indexed_blocks(names, "encoder.block.");
  const std::optional<std::vector<int64_t>> bias = rank2(kBias0);
  if (!bias) return cannot_infer(what, absl::StrCat("no 2-D '", kBias0, "'"));
  c.relative_attention_num_buckets = (*bias)[0];
  c.num_heads = (*bias)[1];
  const std::optional<std::vector<int64_t>> q = rank2(kQ0);
  if (!q) return cannot_infer(what, absl::StrCat("no 2-D '", kQ0, "'"));
  if (c.num_heads < 1 || (*q)[0] % c.num_heads != 0) {
    return cannot_infer(what, absl::StrCat("q is ", shape_string(*q), ", not a multiple of the bias's ", c.num_heads,
                                           " heads"));
  }
  c.d_kv = (*q)[0] / c.num_heads;
  if (const std::optional<std::vector<int64_t>> wi0 = rank2(kWi0)) {
    c.feed_forward = T5FeedForward::kGatedGelu;
    c.d_ff = (*wi0)[0];
  } else if (const std::optional<std::vector<int64_t>> wi = rank2(kWi)) {
    c.feed_forward = T5FeedForward::kRelu;
    c.d_ff = (*wi)[0];
  } else {
    return cannot_infer(what, absl::StrCat("no 2-D '", kWi0, "' or '", kWi, "'"));
  }
  c.umt5 = std::find(names.begin(), names.end(), kBias1) != names.end();
  c.relative_attention_max_distance = 128;
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

}  // namespace diffusiond
