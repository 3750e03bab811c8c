// What one denoiser call needs in working memory (activations), asked
// before it runs so the engine can admit it against a memory budget: the
// query (shapes, batch, dtype, device), the estimate with a breakdown for
// error messages, and a tally that builds one term by term. One estimator
// per architecture serves every tier (RAM now, VRAM later); each lives with
// its model, declared together in denoiser_activations.h.
//
// Not here: weights (the loader's plan counts them), reserving anything
// (core/engine/step_admission.h) or VAE decodes (vae/vae_memory.h).
#ifndef DIFFUSIOND_CORE_MODELS_ACTIVATION_ESTIMATE_H_
#define DIFFUSIOND_CORE_MODELS_ACTIVATION_ESTIMATE_H_

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/models/model.h"
#include "core/precision/weight_store.h"

namespace diffusiond {

// One call to estimate: a Step (one forward) or one step of a Denoise (the
// model's predictor plus the loop's own tensors). A recipe's
// least_call_bytes (model_family.h) reads it by the model's role as well: a
// text encoder's encode of text_tokens tokens, an image decoder's decode of
// latent_shape [C, H, W].
struct ActivationQuery {
  // One item's latents: unpacked [C, H, W] as Denoise takes them, or one
  // item of the model's own Step input (Z-Image "x" item [C, F, H, W],
  // FLUX "hidden_states" item [S, in_channels]). No default.
  std::vector<int64_t> latent_shape;
  // Latents per call: a Step's batch, or 2 for a guided Denoise step (its
  // positive and negative pass), else 1. Default 1.
  int64_t batch = 1;
  // The longest text (caption) sequence of the call, before any padding.
  int64_t text_tokens = 0;
  // The dtype activations and materialised weights have. Default float32.
  torch::ScalarType compute_dtype = torch::kFloat32;
  // CPU: attention takes the chunked paths of common/attention.cc under the
  // model's AttentionOptions (native SDPA where libtorch >= 2 has it).
  // Otherwise native SDPA, which never holds a whole score matrix.
  // Default true.
  bool device_is_cpu = true;
  // True for a Denoise step: adds the loop's float32 latents, noise,
  // predictions and velocity, and lets a model that runs guidance as two
  // forwards (FLUX) size one forward of one item. Default false (a Step).
  bool denoise_loop = false;
};

// The peak bytes of the tensors one call allocates beyond what exists
// before it (weights, inputs a Step was given), as an upper bound, plus
// activation_allocator_slack_bytes().
struct ActivationEstimate {
  int64_t bytes = 0;
  // What the bytes are made of, for logs and refusals, e.g. "z-image
  // float32, batch 1 x 4224 tokens (4096 image + 128 text) x dim 3840:
  // block peak 9.3 x hidden 577.5 MiB, ...".
  std::string breakdown;
};

// Builds an ActivationEstimate from named terms. Bytes are summed in double
// and saturate at int64's maximum, so absurd shapes give a huge estimate
// (refused by any budget) instead of overflowing. Not thread-safe.
class ActivationTally {
 public:
  // `header` opens the breakdown (the model, dtype and sizes).
  explicit ActivationTally(std::string header) : breakdown_(std::move(header)) {}
  // Adds `bytes` as the term `what`; terms of 0 bytes are left out.
  void add(absl::string_view what, double bytes);
  ActivationEstimate finish() const;
  // Adds the allocator's slack over the terms so far
  // (activation_allocator_slack_bytes), then finishes: every estimate's end.
  ActivationEstimate finish_with_allocator_slack();

 private:
  std::string breakdown_;
  double bytes_ = 0;
  bool first_ = true;
};

// The bytes of the largest weight a forward at `dtype` materialises from
// `weights`: FP8 weights are decoded per use, dense weights stored at
// another dtype converted per use (one at a time). 0 when every weight is
// used as stored.
int64_t largest_materialized_weight_bytes(const WeightStore& weights, torch::ScalarType dtype);

// Returns what to add to `tensor_bytes` of counted tensors for what RSS
// shows beside them (tensors too small to count, page rounding, libtorch's
// per-op buffers, jemalloc's size classes and cached extents): 8 MiB + 10%.
// The counted tensors come within 5% of the peaks; the fixed part is what
// the heap adds at small sizes (a 64x64 Z-Image step peaked 4-5 MiB above
// its tensors + 2 MiB + 10%; tests/unit/models/activation_rss_test.cc).
int64_t activation_allocator_slack_bytes(double tensor_bytes);

// An item's latents as a video-shaped DiT reads them: [C, H, W] is one
// frame, [C, F, H, W] F of them; any other rank has no pixels (H = W = 0).
struct LatentGrid {
  int64_t channels = 0, frames = 1, height = 0, width = 0;
};
LatentGrid latent_grid_of(const std::vector<int64_t>& shape);

// The query of a Step over packed tokens as the MMDiT denoisers take it
// (FLUX, Qwen-Image, Krea 2): "hidden_states" [B, S, C] and
// "encoder_hidden_states" of rank `text_rank` with its tokens on axis 1, at
// `dtype`. Nothing when either is missing or of another rank (the Step
// refuses those).
std::optional<ActivationQuery> packed_step_activation_query(const NamedTensors& inputs, int64_t text_rank,
                                                            torch::ScalarType dtype);

// The same over "hidden_states" of rank `latent_rank` (an item's
// latent_shape is all but the batch axis): the 5-D latents [B, C, F, H, W]
// of the video-shaped DiTs (Wan, Cosmos).
std::optional<ActivationQuery> hidden_states_step_activation_query(const NamedTensors& inputs, int64_t latent_rank,
                                                                   int64_t text_rank, torch::ScalarType dtype);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_ACTIVATION_ESTIMATE_H_
