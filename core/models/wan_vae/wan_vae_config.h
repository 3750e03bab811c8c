// WanVaeConfig: the hyper-parameters of the causal 3-D VAE that diffusers
// ships as two classes with one module tree: AutoencoderKLWan (Wan 2.1) and
// AutoencoderKLQwenImage (Qwen-Image, Krea 2). Read from either class's
// config.json, or inferred from the shapes of a single file in the original
// Wan 2.1 key layout; the class decides the architecture's name and the two
// behaviours that differ (the spatial factor's source, and whether a tiled
// decode clamps).
//
// Not here: parameter names (wan_vae_params.h) or the forward
// (wan_vae_network.h). Wan 2.2's residual VAE (is_residual, patch_size) is
// refused: its module tree and keys differ.
#ifndef DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_CONFIG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Which diffusers class a config names.
enum class WanVaeClass { kWan, kQwenImage };

// The config class's `_class_name`: "AutoencoderKLWan" / "AutoencoderKLQwenImage".
absl::string_view wan_vae_class_name(WanVaeClass config_class);

struct WanVaeConfig {
  WanVaeClass config_class = WanVaeClass::kWan;
  int64_t base_dim = 96;           // encoder widths: base_dim * [1] + dim_mult
  int64_t decoder_base_dim = 96;   // decoder widths: decoder_base_dim * [dim_mult[-1]] + reversed(dim_mult)
  bool decoder_base_dim_set = false;  // Wan's decoder_base_dim was given (null means base_dim)
  int64_t z_dim = 16;              // latent channels
  std::vector<int64_t> dim_mult = {1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  // Level i < levels - 1 halves time as well as space when true; the
  // decoder's level i doubles time when entry levels - 2 - i is true.
  std::vector<bool> temperal_downsample = {false, true, true};
  int64_t in_channels = 3;
  int64_t out_channels = 3;
  // Per-channel latent statistics: pipeline space = (z - mean) / std.
  std::vector<double> latents_mean;
  std::vector<double> latents_std;
  // What was not read from a config but assumed, for describe(); empty when
  // everything came from config.json.
  std::vector<std::string> assumed;

  int64_t levels() const { return static_cast<int64_t>(dim_mult.size()); }
  // Encoder widths [base, base * dim_mult...] and decoder widths
  // [dec * dim_mult[-1], dec * reversed(dim_mult)...]: levels + 1 each.
  std::vector<int64_t> encoder_dims() const;
  std::vector<int64_t> decoder_dims() const;
  // Whether decoder level i (< levels - 1) doubles time.
  bool decoder_upsamples_time(int64_t level) const;
  // Pixels per latent along a side: 2^(levels - 1) (Wan's
  // scale_factor_spatial and Qwen-Image's 2^len(temperal_downsample) must
  // equal it).
  int64_t spatial_factor() const { return int64_t{1} << (levels() - 1); }
  // Frames per latent frame after the first: 2^(true entries).
  int64_t temporal_factor() const;
  // Decoded frames of `latent_frames`: 1 + temporal_factor * (f - 1).
  int64_t frames_of(int64_t latent_frames) const { return 1 + temporal_factor() * (latent_frames - 1); }

  // Checks the invariants the model relies on: sizes positive and bounded,
  // len(temperal_downsample) = levels - 1, one mean and a nonzero std per
  // latent channel. INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
  // One line for logs and plans, naming every assumed value.
  std::string describe() const;
};

// Parses a config.json of class AutoencoderKLWan or AutoencoderKLQwenImage
// (the class is required). Missing fields take upstream's constructor
// defaults. Refused (INVALID_ARGUMENT naming the field and what was
// expected): a non-empty attn_scales (the encoder would gain attention
// blocks no released checkpoint has), is_residual true or a patch_size
// above 1 (Wan 2.2's VAE), a scale_factor_spatial that is not the
// network's. `what` (the file) prefixes messages.
absl::StatusOr<WanVaeConfig> wan_vae_config_from_json(const nlohmann::json& root, absl::string_view what);

// Returns `config` as the config.json of its class the parser reads,
// `_class_name` included. `assumed` is not written.
nlohmann::json to_json(const WanVaeConfig& config);

// Infers the config from tensor shapes by canonical (diffusers) name:
// widths from the convs, levels and res blocks from the block counts, the
// time flags from the time_conv weights. The class is assumed to be
// AutoencoderKLWan (upstream's single-file loader reads the original layout
// only as that class) and the latent statistics Wan 2.1's (z_dim 16 only);
// both are recorded in `assumed`. INVALID_ARGUMENT naming a missing tensor.
absl::StatusOr<WanVaeConfig> infer_wan_vae_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_VAE_WAN_VAE_CONFIG_H_
