#include "core/models/vae/vae_params.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace diffusiond {
namespace {

class TableBuilder {
 public:
  explicit TableBuilder(std::vector<ParamSpec>* out) : out_(out) {}

  void conv(const std::string& prefix, int64_t out_ch, int64_t in_ch, int64_t k) {
    out_->push_back({prefix + ".weight", {out_ch, in_ch, k, k}, ParamKind::kLayerWeight});
    out_->push_back({prefix + ".bias", {out_ch}, ParamKind::kBias});
  }
  void linear(const std::string& prefix, int64_t ch) {
    out_->push_back({prefix + ".weight", {ch, ch}, ParamKind::kLayerWeight});
    out_->push_back({prefix + ".bias", {ch}, ParamKind::kBias});
  }
  void norm(const std::string& prefix, int64_t ch) {
    out_->push_back({prefix + ".weight", {ch}, ParamKind::kNormWeight});
    out_->push_back({prefix + ".bias", {ch}, ParamKind::kBias});
  }
  void resnet(const std::string& prefix, int64_t in_ch, int64_t out_ch) {
    norm(prefix + ".norm1", in_ch);
    conv(prefix + ".conv1", out_ch, in_ch, 3);
    norm(prefix + ".norm2", out_ch);
    conv(prefix + ".conv2", out_ch, out_ch, 3);
    if (in_ch != out_ch) conv(prefix + ".conv_shortcut", out_ch, in_ch, 1);
  }
  void mid_block(const std::string& prefix, int64_t ch, bool attention) {
    resnet(prefix + ".resnets.0", ch, ch);
    if (attention) {
      norm(prefix + ".attentions.0.group_norm", ch);
      for (const char* proj : {"to_q", "to_k", "to_v", "to_out.0"}) {
        linear(absl::StrCat(prefix, ".attentions.0.", proj), ch);
      }
    }
    resnet(prefix + ".resnets.1", ch, ch);
  }

 private:
  std::vector<ParamSpec>* out_;
};

// ldm's "{mid}.block_1" / "block_2" / "attn_1" and their parts.
std::optional<std::string> map_ldm_mid(absl::string_view side, absl::string_view rest) {
  static constexpr std::pair<absl::string_view, absl::string_view> kMid[] = {
      {"block_1.", "resnets.0."},           {"block_2.", "resnets.1."},
      {"attn_1.norm.", "attentions.0.group_norm."}, {"attn_1.q.", "attentions.0.to_q."},
      {"attn_1.k.", "attentions.0.to_k."},  {"attn_1.v.", "attentions.0.to_v."},
      {"attn_1.proj_out.", "attentions.0.to_out.0."},
  };
  for (const auto& [from, to] : kMid) {
    if (absl::ConsumePrefix(&rest, from)) return absl::StrCat(side, ".mid_block.", to, rest);
  }
  return std::nullopt;
}

// Renames ldm's resnet part "nin_shortcut" to "conv_shortcut".
std::string resnet_part(absl::string_view part) {
  if (absl::ConsumePrefix(&part, "nin_shortcut.")) return absl::StrCat("conv_shortcut.", part);
  return std::string(part);
}

// Maps "down.{i}.block.{j}.x" / "down.{i}.downsample.conv.x" (encoder) or
// "up.{k}.…" (decoder, k counted from the output end) to diffusers naming.
std::optional<std::string> map_ldm_level(absl::string_view side, absl::string_view level_kind,
                                         absl::string_view rest, int64_t num_blocks) {
  const std::vector<absl::string_view> parts = absl::StrSplit(rest, absl::MaxSplits('.', 2));
  int64_t level = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &level) || level < 0 || level >= num_blocks) {
    return std::nullopt;
  }
  const bool encoder = level_kind == "down";
  const int64_t index = encoder ? level : num_blocks - 1 - level;
  const std::string block = absl::StrCat(side, encoder ? ".down_blocks." : ".up_blocks.", index);
  if (parts[1] == "block") {
    const std::vector<absl::string_view> sub = absl::StrSplit(parts[2], absl::MaxSplits('.', 1));
    if (sub.size() != 2) return std::nullopt;
    return absl::StrCat(block, ".resnets.", sub[0], ".", resnet_part(sub[1]));
  }
  absl::string_view tail = parts[2];
  if ((parts[1] == "downsample" || parts[1] == "upsample") && absl::ConsumePrefix(&tail, "conv.")) {
    return absl::StrCat(block, encoder ? ".downsamplers.0.conv." : ".upsamplers.0.conv.", tail);
  }
  return std::nullopt;
}

}  // namespace

std::vector<ParamSpec> vae_parameter_table(const VaeConfig& c) {
  std::vector<ParamSpec> t;
  TableBuilder b(&t);
  const std::vector<int64_t>& ch = c.block_out_channels;
  const int64_t n = c.num_blocks();

  b.conv("encoder.conv_in", ch[0], c.in_channels, 3);
  int64_t prev = ch[0];
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c.layers_per_block; ++j) {
      b.resnet(absl::StrCat("encoder.down_blocks.", i, ".resnets.", j), j == 0 ? prev : ch[i], ch[i]);
    }
    if (i + 1 < n) b.conv(absl::StrCat("encoder.down_blocks.", i, ".downsamplers.0.conv"), ch[i], ch[i], 3);
    prev = ch[i];
  }
  b.mid_block("encoder.mid_block", ch[n - 1], c.mid_block_add_attention);
  b.norm("encoder.conv_norm_out", ch[n - 1]);
  b.conv("encoder.conv_out", 2 * c.latent_channels, ch[n - 1], 3);

  b.conv("decoder.conv_in", ch[n - 1], c.latent_channels, 3);
  b.mid_block("decoder.mid_block", ch[n - 1], c.mid_block_add_attention);
  prev = ch[n - 1];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t out = ch[n - 1 - i];
    for (int64_t j = 0; j <= c.layers_per_block; ++j) {
      b.resnet(absl::StrCat("decoder.up_blocks.", i, ".resnets.", j), j == 0 ? prev : out, out);
    }
    if (i + 1 < n) b.conv(absl::StrCat("decoder.up_blocks.", i, ".upsamplers.0.conv"), out, out, 3);
    prev = out;
  }
  b.norm("decoder.conv_norm_out", ch[0]);
  b.conv("decoder.conv_out", c.out_channels, ch[0], 3);

  if (c.use_quant_conv) b.conv("quant_conv", 2 * c.latent_channels, 2 * c.latent_channels, 1);
  if (c.use_post_quant_conv) b.conv("post_quant_conv", c.latent_channels, c.latent_channels, 1);
  return t;
}

PrecisionDeclaration vae_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {".*"};
  return d;
}

absl::string_view strip_vae_prefix(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "first_stage_model.")) absl::ConsumePrefix(&name, "vae.");
  return name;
}

int64_t vae_num_blocks_in(const std::vector<std::string>& names) {
  int64_t count = 0;
  for (const std::string& full : names) {
    absl::string_view rest = strip_vae_prefix(full);
    if (!absl::ConsumePrefix(&rest, "encoder.down_blocks.") && !absl::ConsumePrefix(&rest, "encoder.down.")) {
      continue;
    }
    int64_t index = 0;
    if (absl::SimpleAtoi(rest.substr(0, rest.find('.')), &index)) count = std::max(count, index + 1);
  }
  return count;
}

std::optional<std::string> vae_canonical_name(absl::string_view name, int64_t num_blocks) {
  name = strip_vae_prefix(name);
  if (absl::StartsWith(name, "quant_conv.") || absl::StartsWith(name, "post_quant_conv.")) {
    return std::string(name);
  }
  absl::string_view side;
  absl::string_view rest = name;
  if (absl::ConsumePrefix(&rest, "encoder.")) {
    side = "encoder";
  } else if (absl::ConsumePrefix(&rest, "decoder.")) {
    side = "decoder";
  } else {
    return std::nullopt;
  }
  // diffusers naming, with the attention names of diffusers < 0.14.
  static constexpr std::pair<absl::string_view, absl::string_view> kOldAttention[] = {
      {".attentions.0.query.", ".attentions.0.to_q."}, {".attentions.0.key.", ".attentions.0.to_k."},
      {".attentions.0.value.", ".attentions.0.to_v."},
      {".attentions.0.proj_attn.", ".attentions.0.to_out.0."},
  };
  for (const auto& [from, to] : kOldAttention) {
    const size_t at = name.find(from);
    if (at != absl::string_view::npos) {
      return absl::StrCat(name.substr(0, at), to, name.substr(at + from.size()));
    }
  }
  if (absl::StartsWith(rest, "conv_in.") || absl::StartsWith(rest, "conv_out.") ||
      absl::StartsWith(rest, "conv_norm_out.") || absl::StartsWith(rest, "down_blocks.") ||
      absl::StartsWith(rest, "up_blocks.") || absl::StartsWith(rest, "mid_block.")) {
    return std::string(name);
  }
  // ldm naming.
  if (absl::ConsumePrefix(&rest, "norm_out.")) return absl::StrCat(side, ".conv_norm_out.", rest);
  if (absl::ConsumePrefix(&rest, "mid.")) return map_ldm_mid(side, rest);
  if (side == "encoder" && absl::ConsumePrefix(&rest, "down.")) {
    return map_ldm_level(side, "down", rest, num_blocks);
  }
  if (side == "decoder" && absl::ConsumePrefix(&rest, "up.")) {
    return map_ldm_level(side, "up", rest, num_blocks);
  }
  return std::nullopt;
}

std::vector<std::string> vae_attention_weight_names(const VaeConfig& c) {
  std::vector<std::string> names;
  if (!c.mid_block_add_attention) return names;
  for (const char* side : {"encoder", "decoder"}) {
    for (const char* proj : {"to_q", "to_k", "to_v", "to_out.0"}) {
      names.push_back(absl::StrCat(side, ".mid_block.attentions.0.", proj, ".weight"));
    }
  }
  return names;
}

}  // namespace diffusiond
