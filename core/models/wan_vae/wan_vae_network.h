// The causal 3-D VAE's networks as functions over weights, one chunk of
// frames at a time: the decoder over one latent frame, the encoder over
// frames 1, 4, 4, ... of a clip, each carrying a FeatureCache from chunk to
// chunk as diffusers' AutoencoderKLWan / AutoencoderKLQwenImage do with
// feat_cache (CACHE_T = 2). Ported from WanCausalConv3d, WanRMS_norm,
// WanResample, WanResidualBlock, WanAttentionBlock, WanMidBlock, WanUpBlock,
// WanEncoder3d and WanDecoder3d.
//
// What the chunking means (upstream's semantics, which a port must keep):
//   - every 3x3x3 conv is one causal conv over the whole clip with two zero
//     frames in front; the cache holds the last two frames of its input;
//   - a time upsampler skips its time_conv on the first chunk (latent frame
//     0 stays one frame), then runs it as a causal conv over the later
//     chunks only and interleaves its two halves into frames 2t and 2t + 1;
//   - a time downsampler passes the first chunk through and then convolves
//     (kernel 3, stride 2, no padding) the previous chunk's last frame with
//     the current chunk.
// Where a conv meets only zero frames before a one-frame chunk (the first
// chunk, every chunk of an image), it runs as the 2-D conv of the kernel's
// last time slice: the same sums without the zeros.
//
// Not here: latent normalisation, chunk scheduling, tiling, clamping
// (wan_vae_model.h, wan_vae_tiling.h). Activations die as soon as they are
// dead, which wan_vae_memory.h's walk relies on.
#ifndef DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_NETWORK_H_
#define DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_NETWORK_H_

#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

#include "core/models/common/attention.h"
#include "core/models/wan_vae/wan_vae_config.h"

namespace diffusiond {

// Returns the parameter with the canonical `name` at the compute dtype.
using WanVaeParamFn = std::function<torch::Tensor(const std::string& name)>;

// One causal conv's or time resampler's memory of the chunks before.
struct CausalSlot {
  torch::Tensor frames;  // the last <= 2 frames of its input so far
  bool seen = false;     // a chunk has passed (time resamplers)
};

// The feature cache of one pass (an encode or a decode, or one tile of
// it): a slot per causal conv, in call order. Not thread-safe: one pass at
// a time uses it.
class FeatureCache {
 public:
  // Starts a chunk: slots are taken from the first again. On the `last`
  // chunk nothing is kept for a next one (its slots are emptied as used).
  void begin_chunk(bool last);
  // The next slot in call order.
  CausalSlot& next_slot();
  bool keeps() const { return !last_; }
  // Bytes the slots hold.
  int64_t bytes() const;

 private:
  std::vector<CausalSlot> slots_;
  size_t cursor_ = 0;
  bool last_ = false;
};

// x [B, C, T, H, W] through a causal conv of `weight` [O, C, kt, kh, kw]
// (spatial padding kh/2, kw/2; kt - 1 frames of context from `slot` or
// zeros), updating `slot` when `keep`. With `allow_2d`, a one-frame chunk
// without context runs as the 2-D conv of the kernel's last time slice.
// Throws what libtorch throws.
torch::Tensor causal_conv3d(torch::Tensor x, const torch::Tensor& weight, const torch::Tensor& bias, CausalSlot* slot,
                            bool keep, bool allow_2d = true);

// One latent frame z [B, z_dim, 1, h, w] in model space (post_quant_conv
// not yet applied) -> frames [B, out_channels, n, 8h, 8w], unclamped: n = 1
// on the first chunk, temporal_factor() after. Throws what libtorch
// throws, and OperationCancelled between resnets when the call's token
// fires.
torch::Tensor wan_vae_decode_chunk(const WanVaeConfig& config, const WanVaeParamFn& param, torch::Tensor z,
                                   FeatureCache* cache, const AttentionOptions& attention);

// One chunk of frames x [B, in_channels, T, H, W] (T = 1 first, then 4)
// -> moments [B, 2 z_dim, t, H/8, W/8] (quant_conv applied). Throws as
// wan_vae_decode_chunk.
torch::Tensor wan_vae_encode_chunk(const WanVaeConfig& config, const WanVaeParamFn& param, torch::Tensor x,
                                   FeatureCache* cache, const AttentionOptions& attention);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_NETWORK_H_
