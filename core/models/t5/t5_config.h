// T5Config: the hyper-parameters of a transformers T5 v1.1 or UMT5 encoder
// checkpoint (T5EncoderModel / UMT5EncoderModel, or the encoder of a full
// T5 / UMT5), read from its config.json.
//
// Not here: the parameter table or inferring a config from tensor shapes
// (t5_params.h), the forward (t5_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_T5_T5_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_T5_T5_CONFIG_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// The feed-forward block, transformers' feed_forward_proj.
enum class T5FeedForward {
  kRelu,       // "relu": wo(relu(wi(x))) (the original T5)
  kGatedGelu,  // "gated-gelu": wo(gelu_tanh(wi_0(x)) * wi_1(x)) (T5 v1.1, UMT5)
};
absl::string_view t5_feed_forward_name(T5FeedForward f);

// Defaults are transformers' T5Config defaults; parse_t5_config starts
// from UMT5Config's for model_type "umt5".
struct T5Config {
  // UMT5: every block has its own relative_attention_bias. T5: block 0's
  // bias (and the mask) is computed once and shared by every block.
  bool umt5 = false;
  int64_t vocab_size = 32128;
  int64_t d_model = 512;
  int64_t d_kv = 64;  // per head; heads * d_kv need not equal d_model
  int64_t d_ff = 2048;
  int64_t num_layers = 6;
  int64_t num_heads = 8;
  int64_t relative_attention_num_buckets = 32;
  int64_t relative_attention_max_distance = 128;
  double layer_norm_epsilon = 1e-6;
  T5FeedForward feed_forward = T5FeedForward::kRelu;

  // Width of q, k, v and o's input.
  int64_t inner_dim() const { return num_heads * d_kv; }
  // Whether block `index` holds a relative_attention_bias.
  bool has_relative_bias(int64_t index) const { return umt5 || index == 0; }
  // "T5" or "UMT5", for messages.
  const char* name() const { return umt5 ? "UMT5" : "T5"; }
  // A one-line description for logs and `plan`.
  std::string describe() const;

  // Checks what the model relies on: sizes in the bounds of
  // config_limits.h, at least 4 buckets (each direction needs an exact
  // half) and a max distance beyond the exact buckets (num_buckets / 4),
  // a positive eps. INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
};

// Parses a transformers config.json of model_type "t5" or "umt5"
// (architectures, if given, the encoder, the bare model or the
// conditional-generation model of that type). Refuses feed_forward_proj
// other than "relu" and "gated-gelu", and dense_act_fn / is_gated_act that
// contradict it. INVALID_ARGUMENT naming the field, what it holds and what
// was expected; `what` (the file) prefixes messages.
absl::StatusOr<T5Config> parse_t5_config(absl::string_view json, absl::string_view what);
// The same over a config already parsed (Checkpoint::config(), read once
// per load).
absl::StatusOr<T5Config> t5_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads: model_type,
// architectures (the encoder), every field, and feed_forward_proj with the
// dense_act_fn and is_gated_act that transformers derives from it.
nlohmann::json to_json(const T5Config& config);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_T5_T5_CONFIG_H_
