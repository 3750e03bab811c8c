#include "core/models/vae/vae_config.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/bounded_text.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr char kVaeClassName[] = "AutoencoderKL";
constexpr char kVaeDownBlock[] = "DownEncoderBlock2D";
constexpr char kVaeUpBlock[] = "UpDecoderBlock2D";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<VaeConfig> kVaeFields[] = {
    {"in_channels", &VaeConfig::in_channels},
    {"out_channels", &VaeConfig::out_channels},
    {"layers_per_block", &VaeConfig::layers_per_block},
    {"norm_num_groups", &VaeConfig::norm_num_groups},
    {"latent_channels", &VaeConfig::latent_channels},
    {"scaling_factor", &VaeConfig::scaling_factor},
    {"shift_factor", &VaeConfig::shift_factor},
    {"use_quant_conv", &VaeConfig::use_quant_conv},
    {"use_post_quant_conv", &VaeConfig::use_post_quant_conv},
    {"mid_block_add_attention", &VaeConfig::mid_block_add_attention},
};

// Checks that an optional list of block types has `n` entries, all `type`.
absl::Status check_block_types(const json& root, const char* field, absl::string_view type,
                               int64_t n, absl::string_view what) {
  if (!root.contains(field)) return absl::OkStatus();
  const json& v = root.at(field);
  const std::string expected = absl::StrCat("a list of ", n, " \"", type, "\"");
  if (!v.is_array() || static_cast<int64_t>(v.size()) != n) return json_field_error(what, field, v, expected);
  for (const json& t : v) {
    if (t != json(std::string(type))) return json_field_error(what, field, v, expected);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VaeConfig::validate() const {
  if (block_out_channels.empty() || block_out_channels.size() > 8) {
    return absl::InvalidArgumentError(absl::StrCat("VAE config: ", block_out_channels.size(),
                                                   " blocks, expected 1 to 8"));
  }
  // Bounds: the counts size the parameter table, sample_size the tiles.
  DIFFUSIOND_RETURN_IF_ERROR(check_int_fields(
      "VAE", {{"in_channels", in_channels, 1, kMaxConfigChannels},
              {"out_channels", out_channels, 1, kMaxConfigChannels},
              {"layers_per_block", layers_per_block, 1, kMaxConfigLayers},
              {"norm_num_groups", norm_num_groups, 1, kMaxConfigChannels},
              {"latent_channels", latent_channels, 1, kMaxConfigChannels},
              {"sample_size", sample_size, 1, kMaxConfigPositions}}));
  for (int64_t c : block_out_channels) {
    if (c > kMaxConfigChannels) {
      return absl::InvalidArgumentError(absl::StrCat("VAE config: block_out_channels entry ", c,
                                                     ", expected at most ", kMaxConfigChannels));
    }
    if (c <= 0 || c % norm_num_groups != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "VAE config: block_out_channels [", absl::StrJoin(block_out_channels, ", "),
          "] must be positive multiples of norm_num_groups ", norm_num_groups));
    }
  }
  if (!(scaling_factor > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("VAE config: scaling_factor is ", scaling_factor, ", expected > 0"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("VAE", "scaling_factor", scaling_factor));
  if (!std::isfinite(shift_factor) || std::abs(shift_factor) > kMaxConfigReal) {
    return absl::InvalidArgumentError(
        absl::StrCat("VAE config: shift_factor is ", shift_factor, ", expected a finite number"));
  }
  return absl::OkStatus();
}

std::string VaeConfig::describe() const {
  std::string s = absl::StrCat(
      "AutoencoderKL: block_out_channels [", absl::StrJoin(block_out_channels, ", "), "], ",
      layers_per_block, " layers per block, ", norm_num_groups, " groups, ", latent_channels,
      " latent channels, scaling ", scaling_factor, ", shift ", shift_factor,
      use_quant_conv ? ", quant_conv" : "", use_post_quant_conv ? ", post_quant_conv" : "",
      mid_block_add_attention ? "" : ", no mid attention");
  if (!assumed.empty()) absl::StrAppend(&s, " (assumed: ", absl::StrJoin(assumed, ", "), ")");
  return s;
}

absl::StatusOr<VaeConfig> parse_vae_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return vae_config_from_json(root, what);
}

absl::StatusOr<VaeConfig> vae_config_from_json(const nlohmann::json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(check_config_class(root, what, kVaeClassName));
  // Upstream's constructor defaults where the field is absent.
  VaeConfig c;
  c.block_out_channels = {64};
  c.layers_per_block = 1;
  c.latent_channels = 4;
  c.sample_size = 32;
  c.scaling_factor = 0.18215;
  c.shift_factor = 0.0;
  c.use_quant_conv = true;
  c.use_post_quant_conv = true;
  if (root.contains("block_out_channels")) {
    const json& v = root.at("block_out_channels");
    if (!v.is_array() || v.empty() ||
        !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); })) {
      return json_field_error(what, "block_out_channels", v, "a non-empty list of integers");
    }
    c.block_out_channels = v.get<std::vector<int64_t>>();
  }
  if (root.contains("act_fn") && root.at("act_fn") != json("silu")) {
    return json_field_error(what, "act_fn", root.at("act_fn"), "\"silu\" (the only activation supported)");
  }
  if (root.contains("sample_size") && root.at("sample_size").is_array()) {
    const json& v = root.at("sample_size");
    if (v.empty() || !v[0].is_number_integer()) return json_field_error(what, "sample_size", v, "an integer");
    c.sample_size = v[0].get<int64_t>();  // upstream tiles by the first entry
  } else {
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "sample_size", what, &c.sample_size));
  }
  for (const char* field : {"latents_mean", "latents_std"}) {
    if (root.contains(field) && !root.at(field).is_null()) {
      return json_field_error(what, field, root.at(field), "null (per-channel latent statistics are not supported)");
    }
  }
  const int64_t n = c.num_blocks();
  DIFFUSIOND_RETURN_IF_ERROR(check_block_types(root, "down_block_types", kVaeDownBlock, n, what));
  DIFFUSIOND_RETURN_IF_ERROR(check_block_types(root, "up_block_types", kVaeUpBlock, n, what));
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kVaeFields, &c));
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return c;
}

nlohmann::json to_json(const VaeConfig& config) {
  json root = {{"_class_name", kVaeClassName}, {"act_fn", "silu"}};
  root["block_out_channels"] = config.block_out_channels;
  root["down_block_types"] = std::vector<std::string>(config.block_out_channels.size(), kVaeDownBlock);
  root["up_block_types"] = std::vector<std::string>(config.block_out_channels.size(), kVaeUpBlock);
  root["sample_size"] = config.sample_size;
  write_config_fields(config, kVaeFields, &root);
  return root;
}

absl::StatusOr<VaeConfig> infer_vae_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto need = [&](const std::string& name) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": cannot infer the VAE config: tensor '", name, "' is missing or not a 4-D conv weight"));
    }
    return *shape;
  };
  VaeConfig c;
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> conv_in, need("encoder.conv_in.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> dec_in, need("decoder.conv_in.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> dec_out, need("decoder.conv_out.weight"));
  c.in_channels = conv_in[1];
  c.out_channels = dec_out[0];
  c.latent_channels = dec_in[1];
  const int64_t blocks = count_indexed_blocks(names, "encoder.down_blocks.");
  c.block_out_channels.clear();
  for (int64_t i = 0; i < blocks; ++i) {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<int64_t> conv1,
                                need(absl::StrCat("encoder.down_blocks.", i, ".resnets.0.conv1.weight")));
    c.block_out_channels.push_back(conv1[0]);
  }
  c.layers_per_block = count_indexed_blocks(names, "encoder.down_blocks.0.resnets.");
  c.use_quant_conv = shape_of("quant_conv.weight").has_value();
  c.use_post_quant_conv = shape_of("post_quant_conv.weight").has_value();
  c.mid_block_add_attention = shape_of("decoder.mid_block.attentions.0.to_q.weight").has_value();
  c.norm_num_groups = 32;
  for (int64_t ch : c.block_out_channels) {
    while (c.norm_num_groups > 1 && ch % c.norm_num_groups != 0) c.norm_num_groups /= 2;
  }
  c.assumed = {absl::StrCat("norm_num_groups ", c.norm_num_groups), "sample_size 1024",
               absl::StrCat("FLUX scaling_factor ", kFluxVaeScalingFactor),
               absl::StrCat("FLUX shift_factor ", kFluxVaeShiftFactor)};
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

}  // namespace diffusiond
