#include "core/models/vae/vae_family.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/config_limits.h"
#include "core/models/vae/vae_config.h"
#include "core/models/vae/vae_memory.h"
#include "core/models/vae/vae_model.h"
#include "core/models/vae/vae_params.h"
#include "core/models/vae/vae_tiling.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kConfigClass = "AutoencoderKL";

std::vector<std::string> tensor_names(const Checkpoint& checkpoint) {
  std::vector<std::string> names;
  for (const TensorRecord& t : checkpoint.tensors()) names.push_back(t.name);
  return names;
}

class VaeRecipe final : public TableRecipe {
 public:
  explicit VaeRecipe(const VaeConfig& config) : TableRecipe(vae_parameter_table(config)), config_(config) {}

  std::string describe() const override { return config_.describe(); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return vae_canonical_name(name, config_.num_blocks());
  }
  PrecisionDeclaration declaration() const override { return vae_precision_declaration(); }

  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    // ldm files store the attention projections as [C, C, 1, 1] convs.
    for (const std::string& name : vae_attention_weight_names(config_)) {
      const torch::Tensor* w = weights->dense(name);
      if (w != nullptr && w->dim() == 4 && w->size(2) == 1 && w->size(3) == 1) {
        DIFFUSIOND_RETURN_IF_ERROR(weights->reshape(name, {w->size(0), w->size(1)}));
      }
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<VaeModel> model, VaeModel::create(config_, std::move(weights)));
    return std::unique_ptr<Model>(std::move(model));
  }
  LatentGeometry latent_geometry() const override {
    return {config_.latent_channels, int64_t{1} << (config_.num_blocks() - 1)};
  }
  // A decode of latents [C, H, W]: whole or tile by tile, whichever is less.
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    const std::vector<int64_t>& shape = query.latent_shape;
    if (shape.size() < 2) return 0;
    const int64_t h = shape[shape.size() - 2], w = shape.back();
    const int64_t element = torch::elementSize(query.compute_dtype);
    return std::min(vae_decode_activation_bytes(config_, 1, h, w, element, std::nullopt),
                    vae_decode_activation_bytes(config_, 1, h, w, element, default_vae_tiling(config_)));
  }

 private:
  const VaeConfig config_;
};

class VaeFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kVaeArchitecture; }
  ModelRole role() const override { return ModelRole::kVae; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) == kConfigClass) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    // A single file: the VAE's ends must be there, and no denoiser (a full
    // ldm checkpoint also holds a VAE, but is not one).
    const std::vector<std::string> names = tensor_names(checkpoint);
    const int64_t blocks = vae_num_blocks_in(names);
    bool enc_in = false, dec_in = false, dec_out = false;
    for (const std::string& raw : names) {
      if (absl::StartsWith(raw, "model.diffusion_model.")) return false;
      const std::optional<std::string> name = vae_canonical_name(raw, blocks);
      if (!name.has_value()) continue;
      enc_in |= *name == "encoder.conv_in.weight";
      dec_in |= *name == "decoder.conv_in.weight";
      dec_out |= *name == "decoder.conv_out.weight";
    }
    return enc_in && dec_in && dec_out;
  }

  std::vector<std::string> config_classes() const override { return {std::string(kConfigClass)}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(VaeConfig config, parse_vae_config(json, path));
    return std::unique_ptr<LoadRecipe>(new VaeRecipe(config));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    VaeConfig config;
    if (config_class_name(checkpoint) == kConfigClass) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, vae_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The counts size the table: they must be the checkpoint's own.
      const int64_t blocks = vae_num_blocks_in(tensor_names(checkpoint));
      const std::vector<std::string> names = canonical_tensor_names(
          checkpoint, [blocks](absl::string_view name) { return vae_canonical_name(name, blocks); });
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "block_out_channels (length)",
                                                      config.num_blocks(), checkpoint.path(), names,
                                                      "encoder.down_blocks."));
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "layers_per_block",
                                                      config.layers_per_block, checkpoint.path(), names,
                                                      "encoder.down_blocks.0.resnets."));
    } else {
      const std::vector<std::string> raw = tensor_names(checkpoint);
      const int64_t blocks = vae_num_blocks_in(raw);
      const CanonicalShapes shapes(checkpoint,
                                   [&](absl::string_view name) { return vae_canonical_name(name, blocks); });
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_vae_config(shapes.lookup(), shapes.names(), checkpoint.path()));
    }
    return std::unique_ptr<LoadRecipe>(new VaeRecipe(config));
  }
};

}  // namespace

const ModelFamily* vae_family() {
  static const ModelFamily* const family = new VaeFamily();
  return family;
}

}  // namespace diffusiond
