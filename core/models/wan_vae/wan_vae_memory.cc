#include "core/models/wan_vae/wan_vae_memory.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "core/models/activation_estimate.h"

namespace diffusiond {
namespace {

// oneDNN convolves in channel blocks of up to 16.
int64_t blocked(int64_t channels) { return (channels + 15) / 16 * 16; }

// One item's tensor: channels, frames, rows, columns.
struct Dims {
  int64_t c, t, h, w;
};

// A convolution call as libtorch sees it: `n` the batch of the call (B for
// a 3-D conv, B * frames for the per-frame 2-D ones), per-item sizes.
struct ConvCall {
  bool three_d;
  int64_t n, cin, cout;
  int64_t kt, kh, kw, stride;
  int64_t t_in, h_in, w_in, t_out, h_out, w_out;
};

// The live bytes of the forward as wan_vae_network.cc allocates and frees
// them, and their peak. Tensors of `batch` items at `element` bytes.
class Walk {
 public:
  Walk(int64_t batch, int64_t element, const AttentionOptions& attention)
      : batch_(batch), element_(element), attention_(attention) {}

  int64_t bytes(const Dims& d, int64_t element = 0) const {
    return batch_ * d.c * d.t * d.h * d.w * (element != 0 ? element : element_);
  }
  void hold(int64_t b) {
    live_ += b;
    peak_ = std::max(peak_, live_);
  }
  void drop(int64_t b) { live_ -= b; }
  void spike(int64_t b) { peak_ = std::max(peak_, live_ + b); }
  int64_t live() const { return live_; }
  int64_t peak() const { return peak_; }
  int64_t cache_bytes() const {
    int64_t n = 0;
    for (const Slot& s : slots_) n += s.bytes;
    return n;
  }

  void begin_chunk(bool last) {
    cursor_ = 0;
    keep_ = !last;
  }

  // The current tensor, and whether the forward owns it (the encoder's
  // chunk is a view of the caller's clip).
  struct Cur {
    Dims d;
    bool owned = true;
  };

  Cur pointwise(const Cur& x, int64_t cout) {
    conv({true, batch_, x.d.c, cout, 1, 1, 1, 1, x.d.t, x.d.h, x.d.w, x.d.t, x.d.h, x.d.w});
    return {{cout, x.d.t, x.d.h, x.d.w}};
  }

  // WanRMS_norm (widened to float32 for a 2-byte dtype) with its SiLU in place.
  Cur rms(const Cur& x) {
    const Dims norm = {1, x.d.t, x.d.h, x.d.w};
    if (element_ == 4) {
      hold(bytes(norm));
      hold(bytes(x.d));
      drop(bytes(norm));
    } else {
      hold(bytes(x.d, 4));  // the widened input
      hold(bytes(norm, 4));
      hold(bytes(x.d, 4));
      drop(bytes(norm, 4));
      hold(bytes(x.d));
      drop(2 * bytes(x.d, 4));
    }
    return {x.d};
  }

  Cur causal(Cur x, int64_t cout, int64_t kt, int64_t kh, int64_t kw) { return causal_in(next_slot(), x, cout, kt, kh, kw); }

  Cur resnet(Cur x, int64_t cout) {
    Cur h = causal(rms(x), cout, 3, 3, 3);
    const Cur y = rms(h);
    drop(bytes(h.d));
    h = causal(y, cout, 3, 3, 3);
    if (x.d.c != cout) {
      const Cur shortcut = pointwise(x, cout);
      release(x);
      drop(bytes(shortcut.d));
    } else {
      release(x);
    }
    return h;
  }

  Cur attention(Cur x) {
    const Dims d = x.d;
    const bool copy_in = batch_ > 1 && d.t > 1;
    if (copy_in) hold(bytes(d));
    const Cur y = rms(x);
    const int64_t qkv = conv({false, batch_ * d.t, d.c, 3 * d.c, 1, 1, 1, 1, 1, d.h, d.w, 1, d.h, d.w});
    drop(bytes(y.d));
    if (copy_in) drop(bytes(d));
    hold(qkv);  // q, k, v, each made contiguous
    drop(qkv);
    spike(attention_scratch_bytes({batch_ * d.t, 1, d.h * d.w, d.h * d.w, d.c},
                                  element_ == 4 ? torch::kFloat32 : torch::kBFloat16, true, attention_));
    hold(bytes(d));  // the output
    drop(qkv);
    hold(bytes(d));  // transposed back
    drop(bytes(d));
    const int64_t proj = conv({false, batch_ * d.t, d.c, d.c, 1, 1, 1, 1, 1, d.h, d.w, 1, d.h, d.w});
    drop(bytes(d));
    if (d.t > 1) {
      hold(proj);  // back to [B, C, T, H, W]
      drop(proj);
    }
    drop(proj);  // added into x
    return x;
  }

  Cur mid_block(Cur x) { return resnet(attention(resnet(x, x.d.c)), x.d.c); }

  Cur upsample(Cur x, bool time) {
    if (time) {
      Slot& slot = next_slot();
      if (!slot.seen) {
        slot.seen = true;
      } else {
        x = causal_in(slot, x, 2 * x.d.c, 3, 1, 1);
        const Dims interleaved = {x.d.c / 2, 2 * x.d.t, x.d.h, x.d.w};
        hold(bytes(interleaved));
        drop(bytes(x.d));
        x = {interleaved};
      }
    }
    const Dims d = x.d;
    if (batch_ > 1 && d.t > 1) {
      hold(bytes(d));
      drop(bytes(d));
    }
    const Dims up = {d.c, d.t, 2 * d.h, 2 * d.w};
    hold(bytes(up));
    release(x);
    const int64_t out = conv({false, batch_ * d.t, d.c, d.c / 2, 1, 3, 3, 1, 1, up.h, up.w, 1, up.h, up.w});
    drop(bytes(up));
    if (d.t > 1) {
      hold(out);
      drop(out);
    }
    return {{d.c / 2, d.t, up.h, up.w}};
  }

  Cur downsample(Cur x, bool time) {
    const Dims d = x.d;
    const Dims padded = {d.c, d.t, d.h + 1, d.w + 1};
    hold(bytes(padded));
    release(x);
    const Dims down = {d.c, d.t, (d.h - 2) / 2 + 1, (d.w - 2) / 2 + 1};
    conv({false, batch_ * d.t, d.c, d.c, 1, 3, 3, 2, 1, padded.h, padded.w, 1, down.h, down.w});
    drop(bytes(padded));
    if (d.t > 1) {
      hold(bytes(down));
      drop(bytes(down));
    }
    if (!time) return {down};
    Slot& slot = next_slot();
    const int64_t last = keep_ ? bytes({d.c, 1, down.h, down.w}) : 0;
    hold(last);
    if (!slot.seen) {
      slot.seen = true;
      slot.bytes = last;
      return {down};
    }
    const Dims in = {d.c, down.t + 1, down.h, down.w};
    hold(bytes(in));
    drop(bytes(down));
    drop(slot.bytes);
    slot.bytes = last;
    const Dims out = {d.c, (in.t - 3) / 2 + 1, down.h, down.w};
    conv({true, batch_, d.c, d.c, 3, 1, 1, 2, in.t, in.h, in.w, out.t, out.h, out.w});
    drop(bytes(in));
    return {out};
  }

 private:
  struct Slot {
    int64_t bytes = 0;
    int64_t frames = 0;
    bool seen = false;
  };

  Slot& next_slot() {
    if (cursor_ == slots_.size()) slots_.emplace_back();
    return slots_[cursor_++];
  }
  void release(const Cur& x) {
    if (x.owned) drop(bytes(x.d));
  }

  // One conv call: its scratch at the peak, then its output held. Returns
  // the output's bytes. oneDNN or the native path as libtorch 1.13 picks
  // them on the CPU (ConvParams::use_mkldnn): float32 goes native for a
  // small input (batch 1 and N*C*D2*D3 <= 20480) or a 1x1 kernel on one
  // thread, where the native kernel unfolds the input into columns.
  int64_t conv(const ConvCall& c) {
    const int64_t in = c.n * c.t_in * c.h_in * c.w_in, out = c.n * c.t_out * c.h_out * c.w_out;
    const bool one_by_one = c.kh == 1 && c.kw == 1;
    const int64_t d2d3 = c.three_d ? c.cin * c.t_in * c.h_in : c.cin * c.h_in * c.w_in;
    const bool onednn = element_ != 4 || ((c.stride > 1 || c.n >= 16 || !one_by_one || at::get_num_threads() > 1) &&
                                          (c.n > 1 || c.n * d2d3 > 20480));
    const int64_t out_bytes = c.cout * out * element_;
    if (onednn) {
      spike((blocked(c.cin) * in + blocked(c.cout) * out) * element_);
    } else {
      const bool columns = c.three_d || !one_by_one || c.stride > 1;
      spike((columns ? c.cin * c.kt * c.kh * c.kw * out * element_ : 0) + out_bytes);
    }
    hold(out_bytes);
    return out_bytes;
  }

  // causal_conv3d over `slot`: the 2-D path for a one-frame chunk without
  // context (the slot then shares its input), else the zero-padded
  // concatenation, the kept frames, the 3-D conv.
  Cur causal_in(Slot& slot, const Cur& x, int64_t cout, int64_t kt, int64_t kh, int64_t kw) {
    const Dims d = x.d;
    const int64_t context = kt - 1;
    if (slot.frames == 0 && d.t == 1) {
      conv({false, batch_, d.c, cout, 1, kh, kw, 1, 1, d.h, d.w, 1, d.h, d.w});
      if (keep_) {
        slot.frames = 1;
        slot.bytes = x.owned ? bytes(d) : 0;
      } else {
        release(x);
      }
      return {{cout, d.t, d.h, d.w}};
    }
    const Dims zeros = {d.c, context - slot.frames, d.h, d.w};
    const Dims padded = {d.c, context + d.t, d.h, d.w};
    hold(bytes(zeros));
    hold(bytes(padded));
    drop(bytes(zeros));
    release(x);
    const int64_t kept_frames = keep_ ? std::min(context, slot.frames + d.t) : 0;
    hold(bytes({d.c, kept_frames, d.h, d.w}));
    drop(slot.bytes);
    slot.bytes = bytes({d.c, kept_frames, d.h, d.w});
    slot.frames = kept_frames;
    conv({true, batch_, d.c, cout, kt, kh, kw, 1, padded.t, d.h, d.w, d.t, d.h, d.w});
    drop(bytes(padded));
    return {{cout, d.t, d.h, d.w}};
  }

  const int64_t batch_, element_;
  const AttentionOptions& attention_;
  int64_t live_ = 0, peak_ = 0;
  std::vector<Slot> slots_;
  size_t cursor_ = 0;
  bool keep_ = true;
};

// One latent frame through the decoder (wan_vae_decode_chunk); leaves the
// chunk's frames held and returns their dims.
Dims decoder_chunk(Walk& walk, const WanVaeConfig& c, int64_t h, int64_t w) {
  const std::vector<int64_t> dims = c.decoder_dims();
  Walk::Cur x = walk.pointwise({{c.z_dim, 1, h, w}, false}, c.z_dim);
  x = walk.causal(x, dims[0], 3, 3, 3);
  x = walk.mid_block(x);
  for (int64_t i = 0; i < c.levels(); ++i) {
    for (int64_t r = 0; r <= c.num_res_blocks; ++r) x = walk.resnet(x, dims[i + 1]);
    if (i + 1 < c.levels()) x = walk.upsample(x, c.decoder_upsamples_time(i));
  }
  const Walk::Cur y = walk.rms(x);
  walk.drop(walk.bytes(x.d));
  return walk.causal(y, c.out_channels, 3, 3, 3).d;
}

// One chunk of frames through the encoder (wan_vae_encode_chunk); leaves
// the chunk's moments held and returns their dims.
Dims encoder_chunk(Walk& walk, const WanVaeConfig& c, int64_t frames, int64_t height, int64_t width) {
  const std::vector<int64_t> dims = c.encoder_dims();
  Walk::Cur x = walk.causal({{c.in_channels, frames, height, width}, false}, dims[0], 3, 3, 3);
  for (int64_t i = 0; i < c.levels(); ++i) {
    for (int64_t r = 0; r < c.num_res_blocks; ++r) x = walk.resnet(x, dims[i + 1]);
    if (i + 1 < c.levels()) x = walk.downsample(x, c.temperal_downsample[static_cast<size_t>(i)]);
  }
  x = walk.mid_block(x);
  const Walk::Cur y = walk.rms(x);
  walk.drop(walk.bytes(x.d));
  const Walk::Cur out = walk.causal(y, 2 * c.z_dim, 3, 3, 3);
  const Walk::Cur moments = walk.pointwise(out, 2 * c.z_dim);
  walk.drop(walk.bytes(out.d));
  return moments.d;
}

// One untiled decode of `frames` latent frames of h x w: its peak with the
// caches, the caches at their fullest, and one chunk's frames. Chunks after
// the third repeat the third.
struct DecodeWalk {
  int64_t peak = 0, cache = 0, chunk_frames = 0;
};
DecodeWalk walk_decode(const WanVaeConfig& c, int64_t batch, int64_t frames, int64_t h, int64_t w, int64_t element,
                       const AttentionOptions& attention) {
  Walk walk(batch, element, attention);
  DecodeWalk out;
  for (int64_t k = 0; k < std::min<int64_t>(frames, 3); ++k) {
    walk.begin_chunk(k + 1 == frames);
    const Dims d = decoder_chunk(walk, c, h, w);
    out.chunk_frames = std::max(out.chunk_frames, walk.bytes(d));
    out.cache = std::max(out.cache, walk.cache_bytes());
    walk.drop(walk.bytes(d));  // handed on
  }
  out.peak = walk.peak();
  return out;
}

// One untiled encode of `frames` frames of height x width: its peak, with
// the moments of every chunk joined at the end; `moments` gets their bytes.
// Chunks after the third repeat the third.
int64_t walk_encode(const WanVaeConfig& c, int64_t batch, int64_t frames, int64_t height, int64_t width,
                    int64_t element, const AttentionOptions& attention, int64_t* moments) {
  Walk walk(batch, element, attention);
  const int64_t chunks = 1 + (frames - 1) / 4;
  int64_t chunk_moments = 0;
  for (int64_t k = 0; k < std::min<int64_t>(chunks, 3); ++k) {
    walk.begin_chunk(k + 1 == chunks);
    chunk_moments = walk.bytes(encoder_chunk(walk, c, k == 0 ? 1 : 4, height, width));  // stays held
  }
  const int64_t f = c.spatial_factor();
  const int64_t per_chunk = std::max<int64_t>(1, 4 / c.temporal_factor());
  *moments = walk.bytes({2 * c.z_dim, 1 + (chunks - 1) * per_chunk, height / f, width / f});
  // The chunks not walked, held beside the last, and the join.
  const int64_t unwalked = std::max<int64_t>(0, chunks - 3) * chunk_moments;
  return walk.peak() + unwalked + (chunks > 1 ? *moments : 0);
}

// The origins of tiles along a side, and each tile's extent.
std::vector<int64_t> tile_extents(int64_t size, int64_t tile, int64_t stride) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < size; i += stride) out.push_back(std::min(tile, size - i));
  return out;
}

}  // namespace

WanVaeDecodeBytes wan_vae_decode_activation_bytes(const WanVaeConfig& c, int64_t batch, int64_t frames, int64_t h,
                                                  int64_t w, int64_t element, const std::optional<WanVaeTiling>& tiling,
                                                  const AttentionOptions& attention) {
  const int64_t f = c.spatial_factor();
  // The normalised latents, and the cast or quotient beside them while made.
  const int64_t latents = 2 * batch * c.z_dim * frames * h * w * element;
  WanVaeDecodeBytes out;
  out.frames = batch * c.out_channels * c.frames_of(frames) * h * f * w * f * element;
  int64_t chunk_frames = 0;
  if (tiling.has_value() && tiling->tiles_latents(h, w, f)) {
    // Every tile keeps its cache; one tile's chunk runs at a time; the
    // chunk's tiles are held until assembled (rows, then the whole).
    int64_t tiles_out = 0, worst = 0;
    for (int64_t th : tile_extents(h, tiling->sample_height / f, tiling->stride_height / f)) {
      for (int64_t tw : tile_extents(w, tiling->sample_width / f, tiling->stride_width / f)) {
        const DecodeWalk tile = walk_decode(c, batch, frames, th, tw, element, attention);
        out.cache += tile.cache;
        tiles_out += tile.chunk_frames;
        worst = std::max(worst, tile.peak - tile.cache);
      }
    }
    chunk_frames = batch * c.out_channels * c.temporal_factor() * h * f * w * f * element;
    out.chunk = worst + tiles_out + 2 * chunk_frames;
  } else {
    const DecodeWalk whole = walk_decode(c, batch, frames, h, w, element, attention);
    out.cache = whole.cache;
    out.chunk = whole.peak - whole.cache;
    chunk_frames = whole.chunk_frames;
  }
  const auto with_heap = [](int64_t tensors) { return tensors + activation_allocator_slack_bytes(tensors); };
  out.streamed = with_heap(latents + out.cache + out.chunk);
  // decode(): the frames before the last chunk beside it, then all of them
  // twice while joined.
  out.joined = with_heap(std::max(latents + out.cache + out.chunk + out.frames - std::min(out.frames, chunk_frames),
                                  latents + 2 * out.frames));
  return out;
}

int64_t wan_vae_encode_activation_bytes(const WanVaeConfig& c, int64_t batch, int64_t frames, int64_t height,
                                        int64_t width, int64_t element, const std::optional<WanVaeTiling>& tiling,
                                        const AttentionOptions& attention) {
  // The clip cast to the compute dtype when it is not already float32.
  const int64_t cast = element != 4 ? batch * c.in_channels * frames * height * width * element : 0;
  int64_t moments = 0, peak = 0;
  if (tiling.has_value() && tiling->tiles_pixels(height, width)) {
    // One tile at a time, each with its own cache; every tile's moments
    // kept, then the blended rows and the whole.
    int64_t all = 0;
    for (int64_t th : tile_extents(height, tiling->sample_height, tiling->stride_height)) {
      for (int64_t tw : tile_extents(width, tiling->sample_width, tiling->stride_width)) {
        int64_t tile = 0;
        peak = std::max(peak, all + walk_encode(c, batch, frames, th, tw, element, attention, &tile));
        all += tile;
      }
    }
    peak = std::max(peak, 3 * all);
    moments = all;
  } else {
    peak = walk_encode(c, batch, frames, height, width, element, attention, &moments);
  }
  // Beside the moments: the clamped logvar, std, and the pipeline-space
  // mode and sample with their temporaries, each half the moments.
  const int64_t tensors = cast + std::max(peak, moments + 3 * moments);
  return tensors + activation_allocator_slack_bytes(tensors);
}

}  // namespace diffusiond
