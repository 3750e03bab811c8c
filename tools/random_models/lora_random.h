// Random LoRA adapter files (safetensors, float32) in diffusers/PEFT
// layout, for the demo, the tests and the benchmarks: `transformer.<module>
// .lora_A.weight` [rank, in] and `.lora_B.weight` [out, rank], no alpha (a
// scale of 1), as core/lora reads them.
//
// Not here: reading or applying adapters (core/lora).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_LORA_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_LORA_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/models/flux/flux_config.h"

namespace diffusiond {

using LoraTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Writes `tensors`, each as float32, to `path` (their keys say the layout).
absl::Status write_lora_file(const std::string& path, const LoraTensors& tensors);

// One PEFT module of rank `rank` on the denoiser's `module` ("proj_out"):
// A [rank, in] and B [out, rank] drawn from `seed`, scaled to 0.1.
LoraTensors peft_lora_module(const std::string& module, int64_t in, int64_t out, int64_t rank, uint64_t seed);

// A LoRA of rank `rank` on every attention projection (to_q/k/v, to_out,
// the text stream's add_*_proj and to_add_out, the single blocks' to_q/k/v)
// of a FLUX.1 transformer of `config`: what style LoRAs usually train.
LoraTensors random_flux_attention_lora(const FluxConfig& config, int64_t rank, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_LORA_RANDOM_H_
