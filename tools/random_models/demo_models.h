// The built-in demo models, one per denoiser architecture the daemon
// serves, and random conditioning for them: what the demo, the daemon demo
// and the benchmarks run when no real weights are at hand.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_DEMO_MODELS_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_DEMO_MODELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/conditioning.h"
#include "core/models/diffusion_model.h"

namespace diffusiond {

// The architectures with a demo model: {"z-image", "flux", "qwen-image",
// "krea2", "wan", "cosmos"} (each family's name()).
std::vector<std::string> demo_architectures();

// Writes the demo model of `architecture` as a diffusers folder (random
// weights from `seed`). INVALID_ARGUMENT for an architecture without one.
absl::Status write_demo_model(absl::string_view architecture, const std::string& folder, uint64_t seed);

// Writes the benchmarks' mid-size model of `architecture` (a diffusers
// folder, random weights from `seed`), each at about the cost per step of
// the first: Z-Image dim 1536, 8 + 2 layers; FLUX 12 heads x 128, 3 double +
// 6 single blocks; Qwen-Image 12 heads x 128, 8 blocks; Krea 2 12 heads x
// 128 over 3 KV heads, 8 blocks, a small text fusion; Wan 12 heads x 128,
// 8 layers; Cosmos at Anima's own width, 16 heads x 128, 8 of its 28
// layers (the *_random.h files say more). Returns the text length its
// pipeline feeds it: Z-Image 128 caption tokens, FLUX's T5 padded to 512,
// Qwen-Image a 128-token Qwen2.5-VL prompt, Krea 2 128 tokens (each a stack
// of its 12 tapped layers), Wan's UMT5 padded to 512. INVALID_ARGUMENT for
// an architecture without one.
absl::StatusOr<int64_t> write_mid_size_model(absl::string_view architecture, const std::string& folder,
                                             uint64_t seed);

// The text encoders and the image decoder the benchmarks run beside the
// denoisers: {"qwen2.5-vl", "qwen3-vl", "autoencoder-kl-qwen-image"}
// (Qwen-Image's and Krea 2's text towers, and the VAE both share with
// Anima).
std::vector<std::string> bench_component_architectures();

// Writes the demo pipelines' model of `architecture` (one of
// bench_component_architectures(); random weights from `seed`): the towers
// of the Qwen-Image and Krea 2 demo pipelines, the demo
// AutoencoderKLQwenImage. INVALID_ARGUMENT for another architecture.
absl::Status write_demo_component(absl::string_view architecture, const std::string& folder, uint64_t seed);

// Writes the benchmarks' mid-size model of `architecture`: the towers at
// their released widths with a few layers (mid_size_qwen25_vl_config,
// mid_size_qwen3_vl_config), Qwen-Image's VAE at its real config
// (qwen_image_vae_config). INVALID_ARGUMENT for another architecture.
absl::Status write_mid_size_component(absl::string_view architecture, const std::string& folder, uint64_t seed);

// The latents a demo or benchmark step denoises for a model of `layout` at
// `side` x `side`: [C, H, W] for an image model; [C, F, H, W] for a video
// model (LatentLayout::max_frames > 0), F = `frames` within 1 and
// max_frames.
std::vector<int64_t> demo_latent_shape(const LatentLayout& layout, int64_t side, int64_t frames);

// Conditioning for `inputs` drawn from `seed`: the required tensors with
// `tokens` rows where the length is free, N(0, 1) values; scalars at their
// defaults. Optional tensors (a text key mask) are left out: all tokens
// valid.
Conditioning random_conditioning(const std::vector<ConditioningInput>& inputs, int64_t tokens, uint64_t seed);

// Writes `tensors` to a .safetensors file as float32 (e.g. a conditioning's
// tensors, the form `diffusionctl denoise --conditioning` reads).
absl::Status write_float32_tensors(const std::string& path, const NamedTensors& tensors);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_DEMO_MODELS_H_
