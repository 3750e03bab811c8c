#include "core/models/vae/vae_network.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/cancellation_scope.h"

namespace diffusiond {
namespace {

constexpr double kNormEps = 1e-6;  // every GroupNorm of AutoencoderKL

class Net {
 public:
  Net(const VaeConfig& config, const VaeParamFn& param, const AttentionOptions& attention)
      : c_(config), param_(param), attention_(attention) {}

  torch::Tensor conv(const torch::Tensor& x, const std::string& prefix, int64_t stride = 1,
                     int64_t padding = -1) const {
    const torch::Tensor w = param_(prefix + ".weight");
    if (padding < 0) padding = w.size(-1) / 2;
    return torch::conv2d(x, w, param_(prefix + ".bias"), stride, padding);
  }
  // GroupNorm then SiLU (in place on the fresh norm output).
  torch::Tensor norm_silu(const torch::Tensor& x, const std::string& prefix) const {
    torch::Tensor h = norm(x, prefix);
    return torch::silu_(h);
  }
  torch::Tensor norm(const torch::Tensor& x, const std::string& prefix) const {
    return torch::group_norm(x, c_.norm_num_groups, param_(prefix + ".weight"),
                             param_(prefix + ".bias"), kNormEps);
  }

  // ResnetBlock2D (no time embedding, output scale 1): shortcut(x) + h.
  // Each step reassigns `h`, so its previous value dies as soon as the next
  // exists (vae_memory.cc counts on this).
  torch::Tensor resnet(torch::Tensor x, const std::string& prefix) const {
    torch::Tensor h = norm_silu(x, prefix + ".norm1");
    h = conv(h, prefix + ".conv1");
    h = norm_silu(h, prefix + ".norm2");
    h = conv(h, prefix + ".conv2");
    if (x.size(1) != h.size(1)) x = conv(x, prefix + ".conv_shortcut", 1, 0);
    return x.add_(h);
  }

  // The mid block's single-head attention over the h*w positions, plus the
  // residual.
  torch::Tensor attention(torch::Tensor x, const std::string& prefix) const {
    const int64_t b = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
    torch::Tensor tokens = norm(x, prefix + ".group_norm").view({b, ch, h * w}).transpose(1, 2);
    const auto project = [&](const char* name) {
      return torch::linear(tokens, param_(absl::StrCat(prefix, ".", name, ".weight")),
                           param_(absl::StrCat(prefix, ".", name, ".bias")))
          .unsqueeze(1);  // [B, 1 head, h*w, C]
    };
    torch::Tensor q = project("to_q"), k = project("to_k"), v = project("to_v");
    tokens = torch::Tensor();
    torch::Tensor out = diffusiond::attention(q, k, v, torch::Tensor(), attention_).squeeze(1);
    q = k = v = torch::Tensor();
    out = torch::linear(out, param_(prefix + ".to_out.0.weight"), param_(prefix + ".to_out.0.bias"));
    out = out.transpose(1, 2).reshape({b, ch, h, w});
    return out.add_(x);
  }

  torch::Tensor mid_block(torch::Tensor x, const std::string& prefix) const {
    x = resnet(std::move(x), prefix + ".resnets.0");
    if (c_.mid_block_add_attention) x = attention(std::move(x), prefix + ".attentions.0");
    return resnet(std::move(x), prefix + ".resnets.1");
  }

 private:
  const VaeConfig& c_;
  const VaeParamFn& param_;
  const AttentionOptions& attention_;
};

}  // namespace

torch::Tensor vae_encoder_forward(const VaeConfig& c, const VaeParamFn& param, torch::Tensor x,
                                  const AttentionOptions& attention) {
  const Net net(c, param, attention);
  x = net.conv(x, "encoder.conv_in");
  for (int64_t i = 0; i < c.num_blocks(); ++i) {
    const std::string block = absl::StrCat("encoder.down_blocks.", i);
    for (int64_t j = 0; j < c.layers_per_block; ++j) {
      x = net.resnet(std::move(x), absl::StrCat(block, ".resnets.", j));
    }
    if (i + 1 < c.num_blocks()) {
      // Downsample2D: asymmetric zero pad (right and bottom by 1), then a
      // stride-2 conv without padding.
      x = net.conv(torch::constant_pad_nd(x, {0, 1, 0, 1}, 0), block + ".downsamplers.0.conv", 2, 0);
    }
  }
  x = net.mid_block(std::move(x), "encoder.mid_block");
  x = net.norm_silu(x, "encoder.conv_norm_out");
  x = net.conv(x, "encoder.conv_out");
  if (c.use_quant_conv) x = net.conv(x, "quant_conv", 1, 0);
  return x;
}

torch::Tensor vae_decoder_forward(const VaeConfig& c, const VaeParamFn& param, torch::Tensor z,
                                  const AttentionOptions& attention) {
  const Net net(c, param, attention);
  if (c.use_post_quant_conv) z = net.conv(z, "post_quant_conv", 1, 0);
  torch::Tensor x = net.conv(z, "decoder.conv_in");
  z = torch::Tensor();
  x = net.mid_block(std::move(x), "decoder.mid_block");
  for (int64_t i = 0; i < c.num_blocks(); ++i) {
    const std::string block = absl::StrCat("decoder.up_blocks.", i);
    for (int64_t j = 0; j <= c.layers_per_block; ++j) {
      check_cancelled();  // a cancelled decode stops within one resnet
      x = net.resnet(std::move(x), absl::StrCat(block, ".resnets.", j));
    }
    if (i + 1 < c.num_blocks()) {
      // Upsample2D: nearest x2, then a 3x3 conv.
      x = torch::upsample_nearest2d(x, {2 * x.size(2), 2 * x.size(3)});
      x = net.conv(x, block + ".upsamplers.0.conv");
    }
  }
  x = net.norm_silu(x, "decoder.conv_norm_out");
  return net.conv(x, "decoder.conv_out");
}

}  // namespace diffusiond
