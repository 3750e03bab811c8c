#include "core/models/wan_vae/wan_vae_params.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/models/config_limits.h"

namespace diffusiond {
namespace {

class TableBuilder {
 public:
  explicit TableBuilder(std::vector<ParamSpec>* out) : out_(out) {}

  // A conv of kernel `kernel` (3 or 5 entries): weight [O, I, kernel...], bias [O].
  void conv(const std::string& prefix, int64_t out_ch, int64_t in_ch, std::vector<int64_t> kernel) {
    std::vector<int64_t> shape = {out_ch, in_ch};
    shape.insert(shape.end(), kernel.begin(), kernel.end());
    out_->push_back({prefix + ".weight", shape, ParamKind::kLayerWeight});
    out_->push_back({prefix + ".bias", {out_ch}, ParamKind::kBias});
  }
  void gamma(const std::string& prefix, std::vector<int64_t> shape) {
    out_->push_back({prefix + ".gamma", std::move(shape), ParamKind::kNormWeight});
  }
  void resnet(const std::string& prefix, int64_t in_ch, int64_t out_ch) {
    gamma(prefix + ".norm1", {in_ch, 1, 1, 1});
    conv(prefix + ".conv1", out_ch, in_ch, {3, 3, 3});
    gamma(prefix + ".norm2", {out_ch, 1, 1, 1});
    conv(prefix + ".conv2", out_ch, out_ch, {3, 3, 3});
    if (in_ch != out_ch) conv(prefix + ".conv_shortcut", out_ch, in_ch, {1, 1, 1});
  }
  void mid_block(const std::string& prefix, int64_t ch) {
    resnet(prefix + ".resnets.0", ch, ch);
    gamma(prefix + ".attentions.0.norm", {ch, 1, 1});
    conv(prefix + ".attentions.0.to_qkv", 3 * ch, ch, {1, 1});
    conv(prefix + ".attentions.0.proj", ch, ch, {1, 1});
    resnet(prefix + ".resnets.1", ch, ch);
  }
  // A resample's spatial conv and, for the time-resampling kinds, its time_conv.
  void resample(const std::string& prefix, int64_t ch, int64_t spatial_out, int64_t time_out, bool time) {
    conv(prefix + ".resample.1", spatial_out, ch, {3, 3});
    if (time) conv(prefix + ".time_conv", time_out, ch, {3, 1, 1});
  }

 private:
  std::vector<ParamSpec>* out_;
};

// The original resnet's parts (residual.{0,2,3,6}, shortcut) in diffusers' names.
std::optional<std::string> resnet_part(absl::string_view part) {
  static constexpr std::pair<absl::string_view, absl::string_view> kParts[] = {
      {"residual.0.", "norm1."}, {"residual.2.", "conv1."}, {"residual.3.", "norm2."},
      {"residual.6.", "conv2."}, {"shortcut.", "conv_shortcut."},
  };
  for (const auto& [from, to] : kParts) {
    if (absl::ConsumePrefix(&part, from)) return absl::StrCat(to, part);
  }
  return std::nullopt;
}

// "<k>.<rest>" -> (k, rest).
std::optional<std::pair<int64_t, absl::string_view>> split_index(absl::string_view s) {
  const size_t dot = s.find('.');
  int64_t k = 0;
  if (dot == absl::string_view::npos || !absl::SimpleAtoi(s.substr(0, dot), &k) || k < 0) return std::nullopt;
  return std::make_pair(k, s.substr(dot + 1));
}

std::optional<std::string> map_original(absl::string_view side, absl::string_view rest, int64_t res_blocks) {
  if (absl::ConsumePrefix(&rest, "conv1.")) return absl::StrCat(side, ".conv_in.", rest);
  if (absl::ConsumePrefix(&rest, "head.0.")) return absl::StrCat(side, ".norm_out.", rest);
  if (absl::ConsumePrefix(&rest, "head.2.")) return absl::StrCat(side, ".conv_out.", rest);
  if (absl::ConsumePrefix(&rest, "middle.1.")) return absl::StrCat(side, ".mid_block.attentions.0.", rest);
  for (const auto& [from, to] : {std::pair<absl::string_view, absl::string_view>{"middle.0.", ".mid_block.resnets.0."},
                                 {"middle.2.", ".mid_block.resnets.1."}}) {
    if (absl::ConsumePrefix(&rest, from)) {
      const std::optional<std::string> part = resnet_part(rest);
      if (!part.has_value()) return std::nullopt;
      return absl::StrCat(side, to, *part);
    }
  }
  const bool encoder = side == "encoder";
  if (!absl::ConsumePrefix(&rest, encoder ? "downsamples." : "upsamples.")) return std::nullopt;
  const auto indexed = split_index(rest);
  if (!indexed.has_value()) return std::nullopt;
  const auto [k, tail] = *indexed;
  const bool resample = absl::StartsWith(tail, "resample.") || absl::StartsWith(tail, "time_conv.");
  if (encoder) {
    if (resample) return absl::StrCat("encoder.down_blocks.", k, ".", tail);
    const std::optional<std::string> part = resnet_part(tail);
    if (!part.has_value()) return std::nullopt;
    return absl::StrCat("encoder.down_blocks.", k, ".", *part);
  }
  if (res_blocks < 1) return std::nullopt;
  const int64_t level = k / (res_blocks + 2), j = k % (res_blocks + 2);
  if (resample) {
    if (j != res_blocks + 1) return std::nullopt;
    return absl::StrCat("decoder.up_blocks.", level, ".upsamplers.0.", tail);
  }
  const std::optional<std::string> part = resnet_part(tail);
  if (!part.has_value() || j > res_blocks) return std::nullopt;
  return absl::StrCat("decoder.up_blocks.", level, ".resnets.", j, ".", *part);
}

}  // namespace

std::vector<ParamSpec> wan_vae_parameter_table(const WanVaeConfig& c) {
  std::vector<ParamSpec> t;
  TableBuilder b(&t);
  const std::vector<int64_t> enc = c.encoder_dims(), dec = c.decoder_dims();
  const int64_t levels = c.levels();

  b.conv("encoder.conv_in", enc[0], c.in_channels, {3, 3, 3});
  int64_t k = 0;
  for (int64_t i = 0; i < levels; ++i) {
    int64_t in = enc[i];
    for (int64_t r = 0; r < c.num_res_blocks; ++r, ++k) {
      b.resnet(absl::StrCat("encoder.down_blocks.", k), in, enc[i + 1]);
      in = enc[i + 1];
    }
    if (i + 1 < levels) {
      const bool time = c.temperal_downsample[static_cast<size_t>(i)];
      b.resample(absl::StrCat("encoder.down_blocks.", k++), in, in, in, time);
    }
  }
  const int64_t top = enc[levels];
  b.mid_block("encoder.mid_block", top);
  b.gamma("encoder.norm_out", {top, 1, 1, 1});
  b.conv("encoder.conv_out", 2 * c.z_dim, top, {3, 3, 3});
  b.conv("quant_conv", 2 * c.z_dim, 2 * c.z_dim, {1, 1, 1});
  b.conv("post_quant_conv", c.z_dim, c.z_dim, {1, 1, 1});

  b.conv("decoder.conv_in", dec[0], c.z_dim, {3, 3, 3});
  b.mid_block("decoder.mid_block", dec[0]);
  for (int64_t i = 0; i < levels; ++i) {
    int64_t in = i == 0 ? dec[0] : dec[i] / 2;
    const int64_t out = dec[i + 1];
    for (int64_t r = 0; r <= c.num_res_blocks; ++r) {
      b.resnet(absl::StrCat("decoder.up_blocks.", i, ".resnets.", r), in, out);
      in = out;
    }
    if (i + 1 < levels) {
      b.resample(absl::StrCat("decoder.up_blocks.", i, ".upsamplers.0"), out, out / 2, 2 * out,
                 c.decoder_upsamples_time(i));
    }
  }
  b.gamma("decoder.norm_out", {dec[levels], 1, 1, 1});
  b.conv("decoder.conv_out", c.out_channels, dec[levels], {3, 3, 3});
  return t;
}

PrecisionDeclaration wan_vae_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {".*"};
  return d;
}

int64_t wan_vae_res_blocks_in(const std::vector<std::string>& names) {
  const int64_t diffusers = count_indexed_blocks(names, "decoder.up_blocks.0.resnets.");
  if (diffusers > 0) return diffusers - 1;
  int64_t first_resample = -1;
  for (const std::string& name : names) {
    absl::string_view rest = name;
    if (!absl::ConsumePrefix(&rest, "encoder.downsamples.")) continue;
    const auto indexed = split_index(rest);
    if (indexed.has_value() && absl::StartsWith(indexed->second, "resample.") &&
        (first_resample < 0 || indexed->first < first_resample)) {
      first_resample = indexed->first;
    }
  }
  return std::max<int64_t>(first_resample, 0);
}

std::optional<std::string> wan_vae_canonical_name(absl::string_view name, int64_t res_blocks) {
  if (absl::ConsumePrefix(&name, "conv1.")) return absl::StrCat("quant_conv.", name);
  if (absl::ConsumePrefix(&name, "conv2.")) return absl::StrCat("post_quant_conv.", name);
  if (absl::StartsWith(name, "quant_conv.") || absl::StartsWith(name, "post_quant_conv.")) return std::string(name);
  absl::string_view rest = name;
  absl::string_view side;
  if (absl::ConsumePrefix(&rest, "encoder.")) {
    side = "encoder";
  } else if (absl::ConsumePrefix(&rest, "decoder.")) {
    side = "decoder";
  } else {
    return std::nullopt;
  }
  for (absl::string_view diffusers : {"conv_in.", "conv_out.", "norm_out.", "mid_block.", "down_blocks.",
                                      "up_blocks."}) {
    if (absl::StartsWith(rest, diffusers)) return std::string(name);
  }
  return map_original(side, rest, res_blocks);
}

}  // namespace diffusiond
