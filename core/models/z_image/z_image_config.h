// ZImageConfig: the hyper-parameters of ZImageTransformer2DModel, read from
// a diffusers config.json or inferred from a single file's tensor shapes.
#ifndef DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_CONFIG_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/denoise/flow_match_schedule.h"

namespace diffusiond {

// Z-Image pads the image and caption sequences to a multiple of 32
// (upstream's SEQ_MULTI_OF): the rows of padding after `n` rows.
constexpr int64_t kZImageSeqMultiple = 32;
constexpr int64_t z_image_padding_for(int64_t n) {
  return (kZImageSeqMultiple - n % kZImageSeqMultiple) % kZImageSeqMultiple;
}

struct ZImageConfig {
  int64_t patch_size = 2;    // all_patch_size[0]
  int64_t f_patch_size = 1;  // all_f_patch_size[0]
  int64_t in_channels = 16;
  int64_t dim = 3840;
  int64_t n_layers = 30;
  int64_t n_refiner_layers = 2;
  int64_t n_heads = 30;
  double norm_eps = 1e-5;
  bool qk_norm = true;
  int64_t cap_feat_dim = 2560;
  double rope_theta = 256.0;
  double t_scale = 1000.0;
  std::array<int64_t, 3> axes_dims = {32, 48, 48};
  std::array<int64_t, 3> axes_lens = {1024, 512, 512};

  int64_t head_dim() const { return dim / n_heads; }
  int64_t ffn_hidden() const { return static_cast<int64_t>(static_cast<double>(dim) / 3 * 8); }
  int64_t adaln_dim() const { return dim < 256 ? dim : 256; }
  int64_t patch_features() const { return f_patch_size * patch_size * patch_size * in_channels; }
  // The key of the x_embedder / final_layer pair, e.g. "2-1".
  std::string patch_key() const;

  // Checks the invariants the model relies on (head_dim = sum(axes_dims),
  // positive sizes, one patch size). INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
};

// Parses a diffusers config.json of class ZImageTransformer2DModel. Missing
// fields take upstream's defaults. INVALID_ARGUMENT for a wrong class or
// type, naming the field; `what` (the file) prefixes messages.
absl::StatusOr<ZImageConfig> parse_z_image_config(absl::string_view json, absl::string_view what);
// The same over a config already parsed (Checkpoint::config(), read once
// per load).
absl::StatusOr<ZImageConfig> z_image_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads, `_class_name`
// included, with upstream's n_kv_heads (= n_heads) and a null
// siglip_feat_dim (not the Omni model).
nlohmann::json to_json(const ZImageConfig& config);

// Infers the config from tensor shapes, as single-file loaders do: dim and
// patch features from x_embedder, layer counts from block indices,
// cap_feat_dim from cap_embedder, head_dim from the q-norm weight. RoPE axes
// split head_dim as upstream's 32:48:48; axes_lens take upstream defaults
// (they only bound the position table). `shape_of` returns a tensor's shape
// by canonical (diffusers) name, or nothing.
absl::StatusOr<ZImageConfig> infer_z_image_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what);

// The values infer_z_image_config() could not read from shapes and took
// from upstream's defaults, as one line for logs and ModelInfo.
std::string z_image_assumed_values(const ZImageConfig& config);

// Z-Image-Turbo's scheduler when a checkpoint has no scheduler_config.json:
// a static shift of 3.0.
ScheduleOptions z_image_default_schedule();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_CONFIG_H_
