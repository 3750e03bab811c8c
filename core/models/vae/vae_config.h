// VaeConfig: the hyper-parameters of diffusers' AutoencoderKL (the 16-channel
// FLUX.1 / Z-Image VAE and its SD relatives), read from a diffusers
// config.json or inferred from a single file's tensor shapes.
//
// Not here: the parameter names (vae_params.h) or the forward (vae_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_VAE_VAE_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_VAE_VAE_CONFIG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// FLUX.1's latent normalisation, assumed when no config says otherwise (a
// bare single file such as BFL's ae.safetensors): this daemon serves the
// 16-channel FLUX / Z-Image VAE, and both ship exactly these values.
inline constexpr double kFluxVaeScalingFactor = 0.3611;
inline constexpr double kFluxVaeShiftFactor = 0.1159;

struct VaeConfig {
  int64_t in_channels = 3;
  int64_t out_channels = 3;
  std::vector<int64_t> block_out_channels = {128, 256, 512, 512};
  int64_t layers_per_block = 2;
  int64_t norm_num_groups = 32;
  int64_t latent_channels = 16;
  int64_t sample_size = 1024;  // upstream's tile_sample_min_size default
  double scaling_factor = kFluxVaeScalingFactor;
  double shift_factor = kFluxVaeShiftFactor;  // 0 when config.json has null
  bool use_quant_conv = false;
  bool use_post_quant_conv = false;
  bool mid_block_add_attention = true;
  // What was not read from a config but assumed, for describe(); empty when
  // everything came from config.json.
  std::vector<std::string> assumed;

  int64_t num_blocks() const { return static_cast<int64_t>(block_out_channels.size()); }
  // Pixels per latent along one side: 2^(blocks - 1).
  int64_t scale_factor() const { return int64_t{1} << (num_blocks() - 1); }

  // Checks the invariants the model relies on: positive sizes, at least one
  // block, every channel count divisible by norm_num_groups. INVALID_ARGUMENT
  // naming the field.
  absl::Status validate() const;
  // One line for logs and plans, naming every assumed value.
  std::string describe() const;
};

// Parses a diffusers config.json of class AutoencoderKL. Missing fields take
// upstream's constructor defaults except as noted on the fields; act_fn
// must be "silu" and the block types the plain encoder/decoder blocks.
// INVALID_ARGUMENT naming the field, what it is and what was expected;
// `what` (the file) prefixes messages.
absl::StatusOr<VaeConfig> parse_vae_config(absl::string_view json, absl::string_view what);
// The same over a config already parsed (Checkpoint::config(), read once
// per load).
absl::StatusOr<VaeConfig> vae_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads, `_class_name`
// included: every field explicit (the parser's defaults for absent ones are
// upstream's, not VaeConfig's), act_fn "silu" and the plain block types.
// `assumed` is not written.
nlohmann::json to_json(const VaeConfig& config);

// Infers the config from tensor shapes by canonical (diffusers) name:
// channels from the encoder's convs, layers_per_block from the first down
// block, quant convs and mid attention from their presence. Shapes cannot
// tell the rest, so it assumes (and records in `assumed`): norm_num_groups
// 32 when every channel count divides by it (all released VAEs), else the
// largest power of two that divides them all; sample_size 1024; FLUX's
// scaling and shift factors. INVALID_ARGUMENT naming a missing tensor.
absl::StatusOr<VaeConfig> infer_vae_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_VAE_VAE_CONFIG_H_
