#include "core/models/wan_vae/wan_vae_family.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/config_limits.h"
#include "core/models/wan_vae/wan_vae_config.h"
#include "core/models/wan_vae/wan_vae_memory.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/models/wan_vae/wan_vae_params.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

std::vector<std::string> tensor_names(const Checkpoint& checkpoint) {
  std::vector<std::string> names;
  for (const TensorRecord& t : checkpoint.tensors()) names.push_back(t.name);
  return names;
}

class WanVaeRecipe final : public TableRecipe {
 public:
  explicit WanVaeRecipe(const WanVaeConfig& config)
      : TableRecipe(wan_vae_parameter_table(config)), config_(config) {}

  std::string describe() const override { return config_.describe(); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return wan_vae_canonical_name(name, config_.num_res_blocks);
  }
  PrecisionDeclaration declaration() const override { return wan_vae_precision_declaration(); }
  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<WanVaeModel> model, WanVaeModel::create(config_, std::move(weights)));
    return std::unique_ptr<Model>(std::move(model));
  }
  LatentGeometry latent_geometry() const override {
    return {config_.z_dim, config_.spatial_factor(), config_.temporal_factor()};
  }
  // A decode of latents [C, h, w] or [C, F, h, w], its frames handed on:
  // whole or tile by tile, whichever is less.
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    const std::vector<int64_t>& shape = query.latent_shape;
    if (shape.size() < 3) return 0;
    const int64_t frames = shape.size() >= 4 ? shape[shape.size() - 3] : 1;
    const int64_t h = shape[shape.size() - 2], w = shape.back();
    const int64_t element = torch::elementSize(query.compute_dtype);
    return std::min(wan_vae_decode_activation_bytes(config_, 1, frames, h, w, element, std::nullopt).streamed,
                    wan_vae_decode_activation_bytes(config_, 1, frames, h, w, element, WanVaeTiling()).streamed);
  }

 private:
  const WanVaeConfig config_;
};

class WanVaeFamily final : public ModelFamily {
 public:
  explicit WanVaeFamily(WanVaeClass config_class) : class_(config_class) {}

  absl::string_view name() const override { return wan_vae_architecture(class_); }
  ModelRole role() const override { return ModelRole::kVae; }
  std::vector<std::string> config_classes() const override { return {std::string(wan_vae_class_name(class_))}; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) == wan_vae_class_name(class_)) return true;
    // Single files without a config of theirs are Wan's (as upstream's
    // single-file loader reads them); Qwen-Image's family comes first and
    // takes those whose config says AutoencoderKLQwenImage.
    if (class_ != WanVaeClass::kWan || checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    const int64_t res_blocks = wan_vae_res_blocks_in(tensor_names(checkpoint));
    int found = 0;
    for (const TensorRecord& t : checkpoint.tensors()) {
      if (absl::StartsWith(t.name, "model.diffusion_model.")) return false;
      const std::optional<std::string> name = wan_vae_canonical_name(t.name, res_blocks);
      found += t.shape.size() == 5 && (name == "encoder.conv_in.weight" || name == "decoder.conv_in.weight" ||
                                       name == "decoder.conv_out.weight");
    }
    return found == 3;
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(const nlohmann::json root, parse_json_strict(json, path));
    DIFFUSIOND_ASSIGN_OR_RETURN(WanVaeConfig config, wan_vae_config_from_json(root, path));
    return std::unique_ptr<LoadRecipe>(new WanVaeRecipe(config));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    const std::vector<std::string> raw = tensor_names(checkpoint);
    const int64_t res_blocks = wan_vae_res_blocks_in(raw);
    const auto canonical = [res_blocks](absl::string_view name) { return wan_vae_canonical_name(name, res_blocks); };
    WanVaeConfig config;
    if (config_class_name(checkpoint) == wan_vae_class_name(class_)) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, wan_vae_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The counts size the table: they must be the checkpoint's own.
      const std::vector<std::string> names = canonical_tensor_names(checkpoint, canonical);
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "dim_mult (length)", config.levels(),
                                                      checkpoint.path(), names, "decoder.up_blocks."));
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_res_blocks + 1",
                                                      config.num_res_blocks + 1, checkpoint.path(), names,
                                                      "decoder.up_blocks.0.resnets."));
    } else {
      const CanonicalShapes shapes(checkpoint, canonical);
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_wan_vae_config(shapes.lookup(), shapes.names(), checkpoint.path()));
    }
    return std::unique_ptr<LoadRecipe>(new WanVaeRecipe(config));
  }

 private:
  const WanVaeClass class_;
};

}  // namespace

const ModelFamily* qwen_image_vae_family() {
  static const ModelFamily* const family = new WanVaeFamily(WanVaeClass::kQwenImage);
  return family;
}

const ModelFamily* wan_vae_family() {
  static const ModelFamily* const family = new WanVaeFamily(WanVaeClass::kWan);
  return family;
}

}  // namespace diffusiond
