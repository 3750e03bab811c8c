// Random-weight Wan 2.x text-to-video checkpoints in the real diffusers
// folder format, for the demo model, tests and benchmarks (no real weights
// can be downloaded here).
//
// Not here: the weight-drawing rule (random_weights.h), the model itself
// (core/models/wan/).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/models/wan/wan_config.h"

namespace diffusiond {

// The built-in demo model: Wan 2.1's layout at the demo models' width, 4
// heads x 64, 4 layers, FFN 1024, text_dim 256 (~10 MB of bf16).
WanConfig demo_wan_config();
// The benchmarks' mid-size configuration: Wan2.1-T2V-1.3B's block (12 heads
// x 128, FFN 8960, UMT5's text_dim 4096) with 8 layers instead of 30: on
// one latent frame of 64 x 64 (1024 tokens) a step costs about the mid-size
// Z-Image's (~0.8 GB of bf16). Its pipeline feeds UMT5 features padded to
// 512 tokens (WanPipeline's max_sequence_length).
WanConfig mid_size_wan_config();

// Writes a diffusers model folder (config.json and a bf16
// diffusion_pytorch_model.safetensors) with weights drawn from `seed` as the
// reference fixture draws them (write_random_weights), in parameter-table
// order; the schedule is the family's default (UniPC, flow shift 3; no
// scheduler_config.json). Creates `folder`; INVALID_ARGUMENT for a config
// that does not validate, UNAVAILABLE if the folder cannot be written.
absl::Status write_random_wan(const WanConfig& config, absl::string_view folder, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_WAN_RANDOM_H_
