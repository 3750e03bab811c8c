// A random-weight CLIP text encoder in transformers' layout and a CLIP
// tokenizer folder in CLIPTokenizer.save_pretrained's files, for the demo,
// tests and a FLUX pipeline folder (text_encoder/ and tokenizer/) where no
// real weights can be downloaded. The tokenizer is synthetic: the 256 byte
// symbols, the same with "</w>", a few English merges, then
// <|startoftext|> and <|endoftext|> — every text tokenizes; the encoder's
// output is noise.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_CLIP_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_CLIP_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/clip/clip_config.h"

namespace diffusiond {

// One more than the largest id write_clip_tokenizer's tokenizer produces:
// the smallest vocab_size an encoder paired with it may have.
int64_t clip_tokenizer_id_limit();

// A small CLIP text tower (hidden 64, 2 layers, 4 heads, intermediate 128,
// 77 positions, quick_gelu, the legacy eos_token_id 2 as FLUX.1's config)
// whose vocabulary fits write_clip_tokenizer's.
ClipTextConfig demo_clip_text_config();

// Writes config.json and a bf16 model.safetensors with transformers' keys
// ("text_model.…", and "text_projection.weight" with a projection) into
// `dir` (created), weights drawn from `seed` (random_weights.h).
// UNAVAILABLE if it cannot be written.
absl::Status write_random_clip_text_encoder(const std::string& dir, const ClipTextConfig& config, uint64_t seed);

// Writes vocab.json, merges.txt, tokenizer_config.json (model_max_length
// 77) and special_tokens_map.json into `dir` (created). UNAVAILABLE if they
// cannot be written.
absl::Status write_clip_tokenizer(const std::string& dir);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_CLIP_RANDOM_H_
