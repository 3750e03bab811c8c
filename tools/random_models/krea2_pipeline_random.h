// A random-weight Krea 2 pipeline folder in diffusers' layout — what
// Generate runs in the demo and the tests when no real weights are at hand:
// model_index.json (Krea2Pipeline, with the text_encoder_select_layers,
// is_distilled and patch_size it registers), a Qwen3-VL text encoder in
// transformers' layout with its Qwen2 tokenizer (text_encoder/,
// tokenizer/), the Krea 2 transformer, AutoencoderKLQwenImage (the VAE
// Krea2Pipeline takes) and upstream's scheduler config. The image is noise.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_KREA2_PIPELINE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_KREA2_PIPELINE_RANDOM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/models/krea2/krea2_config.h"
#include "core/models/qwen3_vl/qwen3_vl_config.h"
#include "core/models/wan_vae/wan_vae_config.h"

namespace diffusiond {

struct Krea2PipelineSizes {
  Qwen3VlConfig text_encoder;
  // The hidden states stacked per token (0: the embeddings), one per
  // transformer.num_text_layers.
  std::vector<int64_t> text_encoder_select_layers;
  Krea2Config transformer;  // text_hidden_dim = text_encoder.hidden_size
  WanVaeConfig vae;         // AutoencoderKLQwenImage
};

// The demo's: a 6-layer Qwen3-VL of width 128 (2 heads x 64 over 1 KV
// head, interleaved M-RoPE [12, 10, 10] as the 4B's [24, 20, 20] at half
// its head_dim; MLP 1024) tapped at hidden states 2 to 5 (as upstream's
// taps, never the last, normed one), the demo Krea 2 transformer (4 tapped
// layers x 128), the demo AutoencoderKLQwenImage: 2.7 M, 4.5 M and 3.6 M
// parameters, each component near the others' size and an encode's working
// memory (few heads) below them, as the integration tests' budgets want (a
// 256 x 256 image in seconds on two cores).
Krea2PipelineSizes demo_krea2_pipeline_sizes();

// Writes the pipeline into `folder` (created), weights drawn from `seed`.
// The tokenizer makes the prompt template's 34 + 5 tokens as the real one
// does (qwen_image_template_tokenizer). INVALID_ARGUMENT for sizes that do not
// validate or agree, UNAVAILABLE if it cannot be written.
absl::Status write_random_krea2_pipeline(const Krea2PipelineSizes& sizes, const std::string& folder, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_KREA2_PIPELINE_RANDOM_H_
