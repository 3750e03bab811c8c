// Random-weight T5 v1.1 / UMT5 encoders in transformers' folder layout, and
// a T5 tokenizer folder, for the demo pipelines (FLUX.1's text_encoder_2 /
// tokenizer_2, Wan's text_encoder / tokenizer), tests and benchmarks: no
// real weights or tokenizers can be downloaded here.
//
// Not here: the weight-drawing rule (random_weights.h), the model
// (core/models/t5/), the tokenizer (core/text/sentencepiece_tokenizer.h).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_T5_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_T5_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/t5/t5_config.h"

namespace diffusiond {

// A T5 v1.1 encoder at a size two CPU cores run in milliseconds: d_model
// 256 (the demo FLUX's joint_attention_dim), 4 heads of 32 (inner 128, not
// d_model, as real T5s allow), d_ff 512 gated-gelu, 2 blocks, vocab 384
// (room for write_t5_tokenizer's default tokenizer and its sentinels).
T5Config demo_t5_config();

// Writes `dir` (created): config.json and a bf16 model.safetensors with
// transformers' keys (the embedding once, as "shared.weight"), weights
// drawn from `seed` by write_random_weights. UNAVAILABLE if it cannot be
// written.
absl::Status write_random_t5_encoder(const std::string& dir, const T5Config& config, uint64_t seed);

struct T5TokenizerFiles {
  // A spiece.model to copy. Empty (the default): one is trained from a
  // small built-in corpus, the same every time.
  std::string spiece_model_path;
  // Pieces to train (default 256) and whether unknown characters become
  // byte pieces (default false, T5's; UMT5's model has byte fallback).
  int train_vocab_size = 256;
  bool byte_fallback = false;
  // Sentinels <extra_id_N> after the pieces. Default 100 (T5's; UMT5 uses 300).
  int64_t extra_ids = 100;
  bool legacy = true;  // FLUX.1's tokenizer_2 says true
};

// Writes a T5Tokenizer folder into `dir` (created) as save_pretrained does:
// spiece.model, tokenizer_config.json (added_tokens_decoder with <pad>,
// </s>, <unk> and the sentinels, legacy, extra_ids) and
// special_tokens_map.json. The ids reach pieces + extra_ids: a model's
// vocab_size must be at least that. INVALID_ARGUMENT if the spiece.model
// cannot be read or trained; UNAVAILABLE if a file cannot be written.
absl::Status write_t5_tokenizer(const std::string& dir, const T5TokenizerFiles& files);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_T5_RANDOM_H_
