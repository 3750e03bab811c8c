#include "core/models/z_image/z_image_family.h"

#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/config_limits.h"
#include "core/models/denoiser_activations.h"
#include "core/models/z_image/z_image_config.h"
#include "core/models/z_image/z_image_model.h"
#include "core/models/z_image/z_image_params.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kConfigClass = "ZImageTransformer2DModel";

class ZImageRecipe final : public TableRecipe {
 public:
  ZImageRecipe(const ZImageConfig& config, const ScheduleOptions& schedule, std::string config_note)
      : TableRecipe(z_image_parameter_table(config)),
        config_(config),
        schedule_(schedule),
        config_note_(std::move(config_note)) {}

  std::string describe() const override {
    const ZImageConfig& c = config_;
    return absl::StrCat("Z-Image: dim ", c.dim, ", ", c.n_layers, " layers, ", c.n_refiner_layers,
                        " refiner layers, ", c.n_heads, " heads, cap_feat_dim ", c.cap_feat_dim,
                        ", in_channels ", c.in_channels, "; ", config_note_);
  }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return z_image_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return z_image_precision_declaration(); }
  LatentGeometry latent_geometry() const override { return {config_.in_channels, 0}; }
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    return denoiser_activations(config_, query, AttentionOptions{}, 0).bytes;
  }

  absl::StatusOr<std::unique_ptr<Model>> build(
      std::unique_ptr<WeightStore> weights) const override {
    for (const FusedSplit& split : z_image_fused_splits(config_, weights->names())) {
      DIFFUSIOND_RETURN_IF_ERROR(weights->split_rows(split.fused, split.parts));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<ZImageModel> model,
                                ZImageModel::create(config_, std::move(weights), schedule_));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const ZImageConfig config_;
  const ScheduleOptions schedule_;
  const std::string config_note_;  // where the config came from, or what was assumed
};

class ZImageFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kZImageArchitecture; }
  ModelRole role() const override { return ModelRole::kDenoiser; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) == kConfigClass) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    bool cap_pad = false, cap_embedder = false, x_pad = false;
    for (const TensorRecord& t : checkpoint.tensors()) {
      const std::optional<std::string> name = z_image_canonical_name(t.name);
      if (!name.has_value()) continue;
      cap_pad |= *name == "cap_pad_token";
      x_pad |= *name == "x_pad_token";
      cap_embedder |= *name == "cap_embedder.1.weight";
    }
    return cap_pad && x_pad && cap_embedder;
  }

  std::vector<std::string> config_classes() const override { return {std::string(kConfigClass)}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(ZImageConfig config, parse_z_image_config(json, path));
    return std::unique_ptr<LoadRecipe>(
        new ZImageRecipe(config, z_image_default_schedule(), absl::StrCat("config from ", path)));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    ZImageConfig config;
    std::string note;
    if (config_class_name(checkpoint) == kConfigClass) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, z_image_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The counts size the table: they must be the checkpoint's own.
      const std::vector<std::string> names = canonical_tensor_names(checkpoint, z_image_canonical_name);
      for (const auto& [field, count, prefix] :
           {std::tuple<const char*, int64_t, const char*>{"n_layers", config.n_layers, "layers."},
            {"n_refiner_layers", config.n_refiner_layers, "noise_refiner."},
            {"n_refiner_layers", config.n_refiner_layers, "context_refiner."}}) {
        DIFFUSIOND_RETURN_IF_ERROR(
            check_declared_count(checkpoint.config_path(), field, count, checkpoint.path(), names, prefix));
      }
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      const CanonicalShapes shapes(checkpoint, z_image_canonical_name);
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_z_image_config(shapes.lookup(), shapes.names(), checkpoint.path()));
      note = absl::StrCat("config inferred from shapes; assumed ", z_image_assumed_values(config));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(ScheduleOptions schedule, checkpoint_schedule(checkpoint, z_image_default_schedule()));
    return std::unique_ptr<LoadRecipe>(new ZImageRecipe(config, schedule, std::move(note)));
  }
};

}  // namespace

const ModelFamily* z_image_family() {
  static const ModelFamily* const family = new ZImageFamily();
  return family;
}

}  // namespace diffusiond
