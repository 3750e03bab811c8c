// A random-weight Z-Image pipeline folder in diffusers' layout — what
// `Generate` runs in the demo and the tests when no real weights are at
// hand: model_index.json, a Qwen3 text encoder (transformers layout) with
// a byte-level BPE tokenizer in Qwen's files, the Z-Image transformer, the
// 16-channel AutoencoderKL and the scheduler config. The image is noise.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_PIPELINE_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_PIPELINE_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/models/qwen3/qwen3_config.h"
#include "core/models/vae/vae_config.h"
#include "core/models/z_image/z_image_config.h"

namespace diffusiond {

struct PipelineSizes {
  Qwen3Config text_encoder;
  ZImageConfig transformer;  // cap_feat_dim = text_encoder.hidden_size
  VaeConfig vae;
};

// The demo's pipeline: a 2-layer Qwen3 of width 128, the demo Z-Image
// transformer, a VAE with channels [32, 32, 64, 64] (a 512 x 512 image in
// seconds on two cores).
PipelineSizes demo_pipeline_sizes();

// Writes the pipeline into `folder` (created), weights drawn from `seed`
// on `device` (a real-size pipeline has billions of values; the CPU's
// generator would take minutes). The tokenizer has the 256 byte symbols and
// Qwen3's chat special tokens, and no merges. UNAVAILABLE if it cannot be
// written.
absl::Status write_random_pipeline(const PipelineSizes& sizes, const std::string& folder, uint64_t seed,
                                   const torch::Device& device = torch::kCPU);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_PIPELINE_RANDOM_H_
