#include "core/models/wan_vae/wan_vae_network.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/cancellation_scope.h"

namespace diffusiond {
namespace {

constexpr double kNormEps = 1e-12;  // F.normalize's

// [B, C, T, H, W] <-> [B * T, C, H, W]: the per-frame ops' layout.
torch::Tensor frames_to_batch(const torch::Tensor& x) {
  return x.permute({0, 2, 1, 3, 4}).reshape({x.size(0) * x.size(2), x.size(1), x.size(3), x.size(4)});
}
torch::Tensor batch_to_frames(const torch::Tensor& y, int64_t batch) {
  return y.view({batch, y.size(0) / batch, y.size(1), y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4}).contiguous();
}

class Net {
 public:
  Net(const WanVaeParamFn& param, FeatureCache* cache, const AttentionOptions& attention)
      : param_(param), cache_(cache), attention_(attention) {}

  torch::Tensor causal(torch::Tensor x, const std::string& prefix) const {
    return causal_conv3d(std::move(x), param_(prefix + ".weight"), param_(prefix + ".bias"), &cache_->next_slot(),
                         cache_->keeps());
  }
  // A 1x1x1 conv (conv_shortcut, quant_conv, post_quant_conv): no context.
  torch::Tensor pointwise(const torch::Tensor& x, const std::string& prefix) const {
    return torch::conv3d(x, param_(prefix + ".weight"), param_(prefix + ".bias"));
  }

  // WanRMS_norm: F.normalize over channels (in float32 for reduced
  // dtypes, then back), times sqrt(C), times gamma.
  torch::Tensor rms(const torch::Tensor& x, const std::string& prefix) const {
    const bool widen = x.scalar_type() == torch::kBFloat16 || x.scalar_type() == torch::kHalf;
    const torch::Tensor xf = widen ? x.to(torch::kFloat32) : x;
    torch::Tensor y = xf / xf.norm(2, {1}, /*keepdim=*/true).clamp_min(kNormEps);
    if (widen) y = y.to(x.scalar_type());
    return y.mul_(std::sqrt(static_cast<double>(x.size(1)))).mul_(param_(prefix + ".gamma"));
  }
  torch::Tensor rms_silu(const torch::Tensor& x, const std::string& prefix) const {
    torch::Tensor y = rms(x, prefix);
    return torch::silu_(y);
  }

  // WanResidualBlock: conv2(silu(norm2(conv1(silu(norm1(x)))))) + shortcut(x).
  // The shortcut runs last, so only x and the branch are alive at once.
  torch::Tensor resnet(torch::Tensor x, const std::string& prefix) const {
    check_cancelled();  // a cancelled pass stops within one resnet
    torch::Tensor h = rms_silu(x, prefix + ".norm1");
    h = causal(std::move(h), prefix + ".conv1");
    h = rms_silu(h, prefix + ".norm2");
    h = causal(std::move(h), prefix + ".conv2");
    if (x.size(1) != h.size(1)) x = pointwise(x, prefix + ".conv_shortcut");
    return h.add_(x);
  }

  // WanAttentionBlock: one head over each frame's positions, no attention
  // across time; the identity added back.
  torch::Tensor attention(torch::Tensor x, const std::string& prefix) const {
    const int64_t b = x.size(0), ch = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
    torch::Tensor qkv = torch::conv2d(rms(frames_to_batch(x), prefix + ".norm"), param_(prefix + ".to_qkv.weight"),
                                      param_(prefix + ".to_qkv.bias"));
    qkv = qkv.view({b * t, 3 * ch, h * w});
    // [B*T, 1 head, h*w, C] each, channels [0, C) | [C, 2C) | [2C, 3C).
    const auto part = [&](int64_t i) { return qkv.narrow(1, i * ch, ch).transpose(1, 2).contiguous().unsqueeze(1); };
    torch::Tensor q = part(0), k = part(1), v = part(2);
    qkv = torch::Tensor();
    torch::Tensor out = diffusiond::attention(q, k, v, torch::Tensor(), attention_).squeeze(1);
    q = k = v = torch::Tensor();
    out = out.transpose(1, 2).reshape({b * t, ch, h, w});
    out = torch::conv2d(out, param_(prefix + ".proj.weight"), param_(prefix + ".proj.bias"));
    return x.add_(batch_to_frames(out, b));
  }

  torch::Tensor mid_block(torch::Tensor x, const std::string& prefix) const {
    x = resnet(std::move(x), prefix + ".resnets.0");
    x = attention(std::move(x), prefix + ".attentions.0");
    return resnet(std::move(x), prefix + ".resnets.1");
  }

  // WanResample upsample2d / upsample3d: for 3d, the time_conv (skipped on
  // the first chunk) doubles the frames; then per frame nearest x2 and a
  // 3x3 conv that halves the channels.
  torch::Tensor upsample(torch::Tensor x, const std::string& prefix, bool time) const {
    if (time) {
      CausalSlot& slot = cache_->next_slot();
      if (!slot.seen) {
        slot.seen = true;
      } else {
        x = causal_conv3d(std::move(x), param_(prefix + ".time_conv.weight"), param_(prefix + ".time_conv.bias"), &slot,
                          cache_->keeps());
        // [B, 2C, T, h, w]: halves [0, C) and [C, 2C) become frames 2t, 2t+1.
        const int64_t b = x.size(0), ch = x.size(1) / 2, t = x.size(2), h = x.size(3), w = x.size(4);
        x = x.view({b, 2, ch, t, h, w}).permute({0, 2, 3, 1, 4, 5}).reshape({b, ch, 2 * t, h, w});
      }
    }
    const int64_t b = x.size(0);
    torch::Tensor y = frames_to_batch(x);
    x = torch::Tensor();
    y = torch::upsample_nearest2d(y, {2 * y.size(2), 2 * y.size(3)});
    y = torch::conv2d(y, param_(prefix + ".resample.1.weight"), param_(prefix + ".resample.1.bias"), {1, 1}, {1, 1});
    return batch_to_frames(y, b);
  }

  // WanResample downsample2d / downsample3d: per frame a zero pad (right
  // and bottom) and a stride-2 3x3 conv; for 3d then the time conv over the
  // previous chunk's last frame and this chunk (the first passes through).
  torch::Tensor downsample(torch::Tensor x, const std::string& prefix, bool time) const {
    const int64_t b = x.size(0);
    torch::Tensor y = torch::constant_pad_nd(frames_to_batch(x), {0, 1, 0, 1}, 0);
    x = torch::Tensor();
    y = torch::conv2d(y, param_(prefix + ".resample.1.weight"), param_(prefix + ".resample.1.bias"), {2, 2},
                      std::vector<int64_t>{0, 0});
    x = batch_to_frames(y, b);
    y = torch::Tensor();
    if (!time) return x;
    CausalSlot& slot = cache_->next_slot();
    const torch::Tensor last = cache_->keeps() ? x.narrow(2, x.size(2) - 1, 1).clone() : torch::Tensor();
    if (!slot.seen) {
      slot.seen = true;
      slot.frames = last;
      return x;
    }
    torch::Tensor in = torch::cat({slot.frames, x}, 2);
    x = torch::Tensor();
    slot.frames = last;
    return torch::conv3d(in, param_(prefix + ".time_conv.weight"), param_(prefix + ".time_conv.bias"), {2, 1, 1});
  }

 private:
  const WanVaeParamFn& param_;
  FeatureCache* cache_;
  const AttentionOptions& attention_;
};

}  // namespace

void FeatureCache::begin_chunk(bool last) {
  cursor_ = 0;
  last_ = last;
}

CausalSlot& FeatureCache::next_slot() {
  if (cursor_ == slots_.size()) slots_.emplace_back();
  return slots_[cursor_++];
}

int64_t FeatureCache::bytes() const {
  int64_t n = 0;
  for (const CausalSlot& s : slots_) n += s.frames.defined() ? s.frames.numel() * s.frames.element_size() : 0;
  return n;
}

torch::Tensor causal_conv3d(torch::Tensor x, const torch::Tensor& weight, const torch::Tensor& bias, CausalSlot* slot,
                            bool keep, bool allow_2d) {
  const int64_t context = weight.size(2) - 1;
  const int64_t pad_h = weight.size(3) / 2, pad_w = weight.size(4) / 2;
  const int64_t have = slot->frames.defined() ? slot->frames.size(2) : 0;
  if (have == 0 && x.size(2) == 1 && allow_2d) {
    // Only the kernel's last time slice meets a real frame. Every caller
    // hands over an input nothing writes to later, so the slot shares it.
    slot->frames = keep ? x : torch::Tensor();
    return torch::conv2d(x.squeeze(2), weight.select(2, context), bias, 1, {pad_h, pad_w}).unsqueeze(2);
  }
  std::vector<torch::Tensor> parts;
  if (have < context) {
    std::vector<int64_t> zeros = x.sizes().vec();
    zeros[2] = context - have;
    parts.push_back(torch::zeros(zeros, x.options()));
  }
  if (have > 0) parts.push_back(slot->frames);
  parts.push_back(std::move(x));
  torch::Tensor padded = torch::cat(parts, 2);
  parts.clear();  // the input and the zeros die here, before the conv
  if (keep) {
    const int64_t n = std::min(context, padded.size(2) - (context - have));
    slot->frames = padded.narrow(2, padded.size(2) - n, n).clone();
  } else {
    slot->frames = torch::Tensor();
  }
  return torch::conv3d(padded, weight, bias, 1, {0, pad_h, pad_w});
}

torch::Tensor wan_vae_decode_chunk(const WanVaeConfig& c, const WanVaeParamFn& param, torch::Tensor z,
                                   FeatureCache* cache, const AttentionOptions& attention) {
  const Net net(param, cache, attention);
  z = net.pointwise(z, "post_quant_conv");
  torch::Tensor x = net.causal(std::move(z), "decoder.conv_in");
  x = net.mid_block(std::move(x), "decoder.mid_block");
  for (int64_t i = 0; i < c.levels(); ++i) {
    const std::string block = absl::StrCat("decoder.up_blocks.", i);
    for (int64_t r = 0; r <= c.num_res_blocks; ++r) x = net.resnet(std::move(x), absl::StrCat(block, ".resnets.", r));
    if (i + 1 < c.levels()) x = net.upsample(std::move(x), block + ".upsamplers.0", c.decoder_upsamples_time(i));
  }
  x = net.rms_silu(x, "decoder.norm_out");
  return net.causal(std::move(x), "decoder.conv_out");
}

torch::Tensor wan_vae_encode_chunk(const WanVaeConfig& c, const WanVaeParamFn& param, torch::Tensor x,
                                   FeatureCache* cache, const AttentionOptions& attention) {
  const Net net(param, cache, attention);
  x = net.causal(std::move(x), "encoder.conv_in");
  int64_t k = 0;
  for (int64_t i = 0; i < c.levels(); ++i) {
    for (int64_t r = 0; r < c.num_res_blocks; ++r) x = net.resnet(std::move(x), absl::StrCat("encoder.down_blocks.", k++));
    if (i + 1 < c.levels()) {
      x = net.downsample(std::move(x), absl::StrCat("encoder.down_blocks.", k++),
                         c.temperal_downsample[static_cast<size_t>(i)]);
    }
  }
  x = net.mid_block(std::move(x), "encoder.mid_block");
  x = net.rms_silu(x, "encoder.norm_out");
  x = net.causal(std::move(x), "encoder.conv_out");
  return net.pointwise(x, "quant_conv");
}

}  // namespace diffusiond
