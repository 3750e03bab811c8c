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

// The demo's: a 2-layer Qwen2.5-VL of width 128 (4 heads x 32, 2 KV heads,
// M-RoPE [4, 6, 6]), the demo Qwen-Image transformer reading it, the demo
// AutoencoderKLQwenImage (a 512 x 512 image in seconds on two cores).
QwenImagePipelineSizes demo_qwen_image_pipeline_sizes();

// Writes the pipeline into `folder` (created), weights drawn from `seed`.
// The tokenizer makes the prompt template's 34 + 5 tokens as the real one
// does (qwen_image_template_tokenizer). INVALID_ARGUMENT for sizes that do not
// validate or agree, UNAVAILABLE if it cannot be written.
absl::Status write_random_qwen_image_pipeline(const QwenImagePipelineSizes& sizes, const std::string& folder,
                                              uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_IMAGE_PIPELINE_RANDOM_H_
