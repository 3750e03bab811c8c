// A random-weight Qwen-Image pipeline folder in diffusers' layout — what
// Generate runs in the demo and the tests when no real weights are at hand:
// model_index.json (QwenImagePipeline), a Qwen2.5-VL text encoder in
// transformers' layout with its Qwen2 tokenizer (text_encoder/,
// tokenizer/), the Qwen-Image transformer, AutoencoderKLQwenImage and
// upstream's scheduler config. The image is noise.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_IMAGE_PIPELINE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_IMAGE_PIPELINE_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/qwen25_vl/qwen25_vl_config.h"
#include "core/models/qwen_image/qwen_image_config.h"
#include "core/models/wan_vae/wan_vae_config.h"

namespace diffusiond {

struct QwenImagePipelineSizes {
  Qwen25VlConfig text_encoder;
  QwenImageConfig transformer;  // joint_attention_dim = text_encoder.hidden_size
  WanVaeConfig vae;             // AutoencoderKLQwenImage, z_dim = transformer's latent channels
};

// The demo's: a 4-layer Qwen2.5-VL of width 256 (2 heads x 128 over 1 KV
// head, the 7B's head_dim and M-RoPE [16, 24, 24]; MLP 768), the demo
// Qwen-Image transformer with 2 blocks reading it, the demo
// AutoencoderKLQwenImage: 3.3 M, 5.1 M and 3.6 M parameters, each
// component near the others' size and an encode's working memory (few
// heads) below them, as the integration tests' budgets want (a 256 x 256
// image in seconds on two cores).
QwenImagePipelineSizes demo_qwen_image_pipeline_sizes();

// Writes the pipeline into `folder` (created), weights drawn from `seed`.
// The tokenizer makes the prompt template's 34 + 5 tokens as the real one
// does (qwen_image_template_tokenizer). INVALID_ARGUMENT for sizes that do not
// validate or agree, UNAVAILABLE if it cannot be written.
absl::Status write_random_qwen_image_pipeline(const QwenImagePipelineSizes& sizes, const std::string& folder,
                                              uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_IMAGE_PIPELINE_RANDOM_H_
