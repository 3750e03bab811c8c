#include "core/models/wan/wan_family.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/config_limits.h"
#include "core/models/denoiser_activations.h"
#include "core/models/wan/wan_config.h"
#include "core/models/wan/wan_model.h"
#include "core/models/wan/wan_params.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kWanConfigClass = "WanTransformer3DModel";

class WanRecipe final : public TableRecipe {
 public:
  WanRecipe(const WanConfig& config, const ScheduleOptions& schedule, std::string config_note)
      : TableRecipe(wan_parameter_table(config)),
        config_(config),
        schedule_(schedule),
        config_note_(std::move(config_note)) {}

  std::string describe() const override { return absl::StrCat(config_.describe(), "; ", config_note_); }
  std::optional<std::string> canonical_name(absl::string_view name) const override { return wan_canonical_name(name); }
  PrecisionDeclaration declaration() const override { return wan_precision_declaration(); }
  // Unpacked latents of in_channels; the model patchifies itself.
  LatentGeometry latent_geometry() const override { return {config_.in_channels, 0}; }
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    return denoiser_activations(config_, query, AttentionOptions{}, 0).bytes;
  }

  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<WanModel> model,
                                WanModel::create(config_, std::move(weights), schedule_));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const WanConfig config_;
  const ScheduleOptions schedule_;
  const std::string config_note_;  // where the config came from, or what was assumed
};

class WanFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kWanArchitecture; }
  ModelRole role() const override { return ModelRole::kDenoiser; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) == kWanConfigClass) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    // The Conv3d patch embedding, the time projection, the text embedder and
    // the head's modulation: together, only Wan has them.
    int found = 0;
    for (const TensorRecord& t : checkpoint.tensors()) {
      const std::optional<std::string> name = wan_canonical_name(t.name);
      found += (name == "patch_embedding.weight" && t.shape.size() == 5) ||
               name == "condition_embedder.time_proj.weight" ||
               name == "condition_embedder.text_embedder.linear_1.weight" || name == "scale_shift_table";
    }
    return found == 4;
  }

  std::vector<std::string> config_classes() const override { return {std::string(kWanConfigClass)}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(WanConfig config, parse_wan_config(json, path));
    return std::unique_ptr<LoadRecipe>(
        new WanRecipe(config, wan_default_schedule(), absl::StrCat("config from ", path)));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    WanConfig config;
    std::string note;
    if (config_class_name(checkpoint) == kWanConfigClass) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, wan_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The count sizes the table: it must be the checkpoint's own.
      const std::vector<std::string> names = canonical_tensor_names(checkpoint, wan_canonical_name);
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_layers", config.num_layers,
                                                      checkpoint.path(), names, "blocks."));
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      const CanonicalShapes shapes(checkpoint, wan_canonical_name);
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_wan_config(shapes.lookup(), shapes.names(), checkpoint.path()));
      note = absl::StrCat("config inferred from shapes; assumed ", wan_assumed_values(config));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(ScheduleOptions schedule, checkpoint_schedule(checkpoint, wan_default_schedule()));
    return std::unique_ptr<LoadRecipe>(new WanRecipe(config, schedule, std::move(note)));
  }
};

}  // namespace

const ModelFamily* wan_family() {
  static const ModelFamily* const family = new WanFamily();
  return family;
}

}  // namespace diffusiond
