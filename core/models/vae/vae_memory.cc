#include "core/models/vae/vae_memory.h"

#include <algorithm>
#include <vector>

namespace diffusiond {
namespace {

// oneDNN convolves in channel blocks of up to 16: a conv holds its input
// reordered and its output, each rounded up to whole blocks.
int64_t blocked(int64_t channels) { return (channels + 15) / 16 * 16; }

// Peak elements of one decoder forward of one item on an h x w latent.
int64_t forward_peak_elements(const VaeConfig& c, int64_t h, int64_t w, int64_t element_bytes,
                              const AttentionOptions& attention) {
  const std::vector<int64_t>& ch = c.block_out_channels;
  const int64_t n = c.num_blocks();
  const auto conv = [](int64_t in, int64_t out) { return blocked(in) + blocked(out); };
  const auto resnet = [&](int64_t in, int64_t out) {
    return std::max({2 * in + conv(in, out), in + 2 * out, in + out + conv(out, out),
                     in + out + conv(in, out)});
  };
  int64_t s = h * w;
  int64_t peak = (c.latent_channels + conv(c.latent_channels, ch[n - 1])) * s;
  peak = std::max(peak, resnet(ch[n - 1], ch[n - 1]) * s);
  if (c.mid_block_add_attention) {
    const int64_t scores = std::min(s * s, attention.max_scores_bytes / element_bytes);
    peak = std::max(peak, 7 * ch[n - 1] * s + scores);
  }
  int64_t prev = ch[n - 1];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t out = ch[n - 1 - i];
    peak = std::max(peak, resnet(prev, out) * s);
    peak = std::max(peak, resnet(out, out) * s);
    if (i + 1 < n) {
      peak = std::max(peak, std::max(5 * out * s, (out + conv(out, out)) * 4 * s));
      s *= 4;
    }
    prev = out;
  }
  peak = std::max(peak, std::max(2 * ch[0], ch[0] + conv(ch[0], c.out_channels)) * s);
  return peak + c.latent_channels * h * w;
}

}  // namespace

int64_t vae_decode_activation_bytes(const VaeConfig& c, int64_t batch, int64_t h, int64_t w,
                                    int64_t element_bytes, const std::optional<VaeTiling>& tiling,
                                    const AttentionOptions& attention) {
  const bool tiled = tiling.has_value() && (h > tiling->latent_tile || w > tiling->latent_tile);
  if (!tiled) return batch * element_bytes * forward_peak_elements(c, h, w, element_bytes, attention);
  const int64_t tile = tiling->latent_tile;
  const int64_t stride = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(tile) * (1 - tiling->overlap_factor)));
  const int64_t cols = (w + stride - 1) / stride;
  const int64_t pixels = h * w * c.scale_factor() * c.scale_factor();
  const int64_t tile_pixels = tiling->sample_tile * tiling->sample_tile;
  const int64_t forward = forward_peak_elements(c, std::min(h, tile), std::min(w, tile), element_bytes, attention);
  return batch * element_bytes *
         (forward + c.latent_channels * h * w + 2 * c.out_channels * pixels + 2 * cols * c.out_channels * tile_pixels);
}

}  // namespace diffusiond
