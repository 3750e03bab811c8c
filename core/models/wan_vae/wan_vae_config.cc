#include "core/models/wan_vae/wan_vae_config.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/config_limits.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr char kWanClass[] = "AutoencoderKLWan";
constexpr char kQwenImageClass[] = "AutoencoderKLQwenImage";

// Both classes' constructor defaults (the Wan 2.1 VAE's statistics).
const std::vector<double>& default_latents_mean() {
  static const auto* const v = new std::vector<double>{-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653,
                                                       -0.1517, 1.5508,  0.4134,  -0.0715, 0.5517,  -0.3632,
                                                       -0.1922, -0.9497, 0.2503,  -0.2921};
  return *v;
}
const std::vector<double>& default_latents_std() {
  static const auto* const v = new std::vector<double>{2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708,
                                                       2.6052, 2.0743, 3.2687, 2.1526, 2.8652, 1.5579,
                                                       1.6382, 1.1253, 2.8251, 1.9160};
  return *v;
}

// Reads an optional list field whose entries all satisfy `is`, converted by
// `get`; absent or null leaves `*out` unchanged.
template <typename T, typename Is>
absl::Status read_list(const json& root, const char* field, absl::string_view what, absl::string_view expected,
                       Is is, std::vector<T>* out) {
  if (!root.contains(field) || root.at(field).is_null()) return absl::OkStatus();
  const json& v = root.at(field);
  if (!v.is_array() || v.size() > 64 || !std::all_of(v.begin(), v.end(), is)) {
    return json_field_error(what, field, v, expected);
  }
  out->clear();
  for (const json& e : v) out->push_back(e.get<T>());
  return absl::OkStatus();
}

}  // namespace

absl::string_view wan_vae_class_name(WanVaeClass config_class) {
  return config_class == WanVaeClass::kWan ? kWanClass : kQwenImageClass;
}

std::vector<int64_t> WanVaeConfig::encoder_dims() const {
  std::vector<int64_t> dims = {base_dim};
  for (int64_t m : dim_mult) dims.push_back(base_dim * m);
  return dims;
}

std::vector<int64_t> WanVaeConfig::decoder_dims() const {
  std::vector<int64_t> dims = {decoder_base_dim * dim_mult.back()};
  for (auto it = dim_mult.rbegin(); it != dim_mult.rend(); ++it) dims.push_back(decoder_base_dim * *it);
  return dims;
}

bool WanVaeConfig::decoder_upsamples_time(int64_t level) const {
  return temperal_downsample[static_cast<size_t>(levels() - 2 - level)];
}

int64_t WanVaeConfig::temporal_factor() const {
  return int64_t{1} << std::count(temperal_downsample.begin(), temperal_downsample.end(), true);
}

absl::Status WanVaeConfig::validate() const {
  const absl::string_view name = wan_vae_class_name(config_class);
  if (dim_mult.empty() || dim_mult.size() > 8) {
    return absl::InvalidArgumentError(absl::StrCat(name, " config: dim_mult has ", dim_mult.size(),
                                                   " entries, expected 1 to 8"));
  }
  if (static_cast<int64_t>(temperal_downsample.size()) != levels() - 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, " config: temperal_downsample has ",
                                                   temperal_downsample.size(), " entries, expected ", levels() - 1,
                                                   " (one per level of dim_mult but the last)"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_int_fields(
      name, {{"base_dim", base_dim, 1, kMaxConfigChannels},
             {"decoder_base_dim", decoder_base_dim, 1, kMaxConfigChannels},
             {"z_dim", z_dim, 1, kMaxConfigChannels},
             {"num_res_blocks", num_res_blocks, 1, kMaxConfigLayers},
             {"in_channels", in_channels, 1, kMaxConfigChannels},
             {"out_channels", out_channels, 1, kMaxConfigChannels}}));
  for (int64_t m : dim_mult) {
    if (m < 1 || m > kMaxConfigChannels || m * std::max(base_dim, decoder_base_dim) > kMaxConfigChannels) {
      return absl::InvalidArgumentError(absl::StrCat(name, " config: dim_mult [", absl::StrJoin(dim_mult, ", "),
                                                     "] gives widths outside [1, ", kMaxConfigChannels, "]"));
    }
  }
  for (int64_t d : decoder_dims()) {
    if (d < 2) {
      return absl::InvalidArgumentError(absl::StrCat(name, " config: decoder width ", d,
                                                     ", expected at least 2 (each upsampler halves it)"));
    }
  }
  if (static_cast<int64_t>(latents_mean.size()) != z_dim || static_cast<int64_t>(latents_std.size()) != z_dim) {
    return absl::InvalidArgumentError(absl::StrCat(name, " config: latents_mean has ", latents_mean.size(),
                                                   " and latents_std ", latents_std.size(),
                                                   " entries, expected z_dim = ", z_dim, " each"));
  }
  for (size_t c = 0; c < latents_std.size(); ++c) {
    if (!std::isfinite(latents_mean[c]) || !std::isfinite(latents_std[c]) || latents_std[c] == 0 ||
        std::abs(latents_std[c]) > kMaxConfigReal || std::abs(latents_mean[c]) > kMaxConfigReal) {
      return absl::InvalidArgumentError(absl::StrCat(name, " config: latents_mean/std entry ", c, " is ",
                                                     latents_mean[c], " / ", latents_std[c],
                                                     ", expected finite numbers and a nonzero std"));
    }
  }
  return absl::OkStatus();
}

std::string WanVaeConfig::describe() const {
  std::vector<std::string> flags;
  for (bool t : temperal_downsample) flags.push_back(t ? "true" : "false");
  std::string s = absl::StrCat(wan_vae_class_name(config_class), ": base_dim ", base_dim,
                               decoder_base_dim != base_dim ? absl::StrCat(", decoder_base_dim ", decoder_base_dim) : "",
                               ", dim_mult [", absl::StrJoin(dim_mult, ", "), "], ", num_res_blocks,
                               " res blocks, temperal_downsample [", absl::StrJoin(flags, ", "), "], ", z_dim,
                               " latent channels, x", spatial_factor(), " spatial, x", temporal_factor(), " temporal");
  if (!assumed.empty()) absl::StrAppend(&s, " (assumed: ", absl::StrJoin(assumed, ", "), ")");
  return s;
}

absl::StatusOr<WanVaeConfig> wan_vae_config_from_json(const nlohmann::json& root, absl::string_view what) {
  if (!root.is_object()) return absl::InvalidArgumentError(absl::StrCat(what, ": not a JSON object"));
  WanVaeConfig c;
  const json cls = root.value("_class_name", json());
  if (cls == json(kWanClass)) {
    c.config_class = WanVaeClass::kWan;
  } else if (cls == json(kQwenImageClass)) {
    c.config_class = WanVaeClass::kQwenImage;
  } else {
    return json_field_error(what, "_class_name", cls, absl::StrCat("\"", kWanClass, "\" or \"", kQwenImageClass, "\""));
  }
  c.latents_mean = default_latents_mean();
  c.latents_std = default_latents_std();
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "base_dim", what, &c.base_dim));
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "z_dim", what, &c.z_dim));
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "num_res_blocks", what, &c.num_res_blocks));
  const auto is_int = [](const json& e) { return e.is_number_integer(); };
  const auto is_number = [](const json& e) { return e.is_number(); };
  DIFFUSIOND_RETURN_IF_ERROR(read_list(root, "dim_mult", what, "a list of integers", is_int, &c.dim_mult));
  DIFFUSIOND_RETURN_IF_ERROR(read_list(root, "temperal_downsample", what, "a list of booleans",
                                       [](const json& e) { return e.is_boolean(); }, &c.temperal_downsample));
  DIFFUSIOND_RETURN_IF_ERROR(read_list(root, "latents_mean", what, "a list of numbers", is_number, &c.latents_mean));
  DIFFUSIOND_RETURN_IF_ERROR(read_list(root, "latents_std", what, "a list of numbers", is_number, &c.latents_std));
  if (root.contains("attn_scales") && !(root.at("attn_scales").is_array() && root.at("attn_scales").empty())) {
    return json_field_error(what, "attn_scales", root.at("attn_scales"),
                            "[] (encoder attention blocks are not supported; no released checkpoint has them)");
  }
  double dropout = 0;  // inference ignores it; read for its type only
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "dropout", what, &dropout));
  c.decoder_base_dim = c.base_dim;
  if (c.config_class == WanVaeClass::kQwenImage) {
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "input_channels", what, &c.in_channels));
    c.out_channels = c.in_channels;
  } else {
    if (root.contains("decoder_base_dim") && !root.at("decoder_base_dim").is_null()) {
      DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "decoder_base_dim", what, &c.decoder_base_dim));
      c.decoder_base_dim_set = true;
    }
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "in_channels", what, &c.in_channels));
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "out_channels", what, &c.out_channels));
    bool is_residual = false;
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "is_residual", what, &is_residual));
    if (is_residual) {
      return json_field_error(what, "is_residual", root.at("is_residual"),
                              "false (Wan 2.2's residual VAE is not supported)");
    }
    int64_t patch_size = 1;
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "patch_size", what, &patch_size));
    if (patch_size != 1) {
      return json_field_error(what, "patch_size", root.at("patch_size"),
                              "null or 1 (patchified VAEs such as Wan 2.2's are not supported)");
    }
    int64_t spatial = 0, temporal = 0;
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "scale_factor_spatial", what, &spatial));
    DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "scale_factor_temporal", what, &temporal));
    if (spatial != 0 && !c.dim_mult.empty() && c.dim_mult.size() <= 8 && spatial != c.spatial_factor()) {
      return json_field_error(what, "scale_factor_spatial", root.at("scale_factor_spatial"),
                              absl::StrCat(c.spatial_factor(), " (2^(levels - 1) of dim_mult)"));
    }
  }
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

nlohmann::json to_json(const WanVaeConfig& c) {
  json root = {{"_class_name", std::string(wan_vae_class_name(c.config_class))},
               {"base_dim", c.base_dim},
               {"z_dim", c.z_dim},
               {"dim_mult", c.dim_mult},
               {"num_res_blocks", c.num_res_blocks},
               {"attn_scales", json::array()},
               {"temperal_downsample", c.temperal_downsample},
               {"dropout", 0.0},
               {"latents_mean", c.latents_mean},
               {"latents_std", c.latents_std}};
  if (c.config_class == WanVaeClass::kQwenImage) {
    root["input_channels"] = c.in_channels;
    return root;
  }
  root["decoder_base_dim"] = c.decoder_base_dim_set ? json(c.decoder_base_dim) : json();
  root["is_residual"] = false;
  root["in_channels"] = c.in_channels;
  root["out_channels"] = c.out_channels;
  root["patch_size"] = json();
  root["scale_factor_spatial"] = c.spatial_factor();
  root["scale_factor_temporal"] = c.temporal_factor();
  return root;
}

absl::StatusOr<WanVaeConfig> infer_wan_vae_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto need = [&](const std::string& name) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != 5) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": cannot infer the Wan VAE config: tensor '", name, "' is missing or not a 5-D conv weight"));
    }
    return *shape;
  };
  WanVaeConfig c;
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> enc_in, need("encoder.conv_in.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> dec_in, need("decoder.conv_in.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> dec_out, need("decoder.conv_out.weight"));
  c.base_dim = enc_in[0];
  c.in_channels = enc_in[1];
  c.z_dim = dec_in[1];
  c.out_channels = dec_out[0];
  const int64_t levels = count_indexed_blocks(names, "decoder.up_blocks.");
  c.num_res_blocks = count_indexed_blocks(names, "decoder.up_blocks.0.resnets.") - 1;
  if (levels < 1 || levels > 8 || c.num_res_blocks < 1 || c.num_res_blocks > kMaxConfigLayers || c.base_dim < 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": cannot infer the Wan VAE config from ", levels,
                                                   " decoder levels of ", c.num_res_blocks, " res blocks"));
  }
  c.dim_mult.clear();
  c.temperal_downsample.clear();
  for (int64_t i = 0; i < levels; ++i) {
    // The flat encoder list: num_res_blocks resnets, then a resample but
    // on the last level.
    const int64_t first = i * (c.num_res_blocks + 1);
    DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> conv1,
                                need(absl::StrCat("encoder.down_blocks.", first, ".conv1.weight")));
    c.dim_mult.push_back(conv1[0] / c.base_dim);
    if (i + 1 < levels) {
      c.temperal_downsample.push_back(
          shape_of(absl::StrCat("encoder.down_blocks.", first + c.num_res_blocks, ".time_conv.weight")).has_value());
    }
  }
  c.decoder_base_dim = dec_in[0] / std::max<int64_t>(1, c.dim_mult.back());
  c.decoder_base_dim_set = c.decoder_base_dim != c.base_dim;
  c.assumed.push_back("class AutoencoderKLWan (a Qwen-Image VAE needs its config.json)");
  if (c.z_dim != static_cast<int64_t>(default_latents_mean().size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the latent statistics of a ", c.z_dim, "-channel VAE cannot be assumed (Wan 2.1's are for ",
        default_latents_mean().size(), " channels); give its config.json"));
  }
  c.latents_mean = default_latents_mean();
  c.latents_std = default_latents_std();
  c.assumed.push_back("Wan 2.1's latents_mean and latents_std");
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

}  // namespace diffusiond
