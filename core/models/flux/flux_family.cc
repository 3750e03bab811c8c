#include "core/models/flux/flux_family.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/config_limits.h"
#include "core/models/denoiser_activations.h"
#include "core/models/flux/flux_model.h"
#include "core/models/flux/flux_params.h"
#include "core/models/flux/flux_weight_layout.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kConfigClass = "FluxTransformer2DModel";

class FluxRecipe final : public TableRecipe {
 public:
  FluxRecipe(const FluxConfig& config, const ScheduleOptions& schedule, std::string config_note)
      : TableRecipe(flux_parameter_table(config)),
        config_(config),
        schedule_(schedule),
        config_note_(std::move(config_note)) {}

  std::string describe() const override { return absl::StrCat(config_.describe(), "; ", config_note_); }
  // FLUX packs 2x2 patches: its latents have a quarter of in_channels.
  LatentGeometry latent_geometry() const override { return {config_.in_channels / 4, 0}; }
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    return denoiser_activations(config_, query, AttentionOptions{}, 0).bytes;
  }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return flux_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return flux_precision_declaration(); }

  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    if (absl::Status s = to_diffusers_layout(config_, weights.get()); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("FLUX checkpoint: ", s.message()));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<FluxModel> model, FluxModel::create(config_, std::move(weights), schedule_));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const FluxConfig config_;
  const ScheduleOptions schedule_;
  const std::string config_note_;  // where the config came from
};

class FluxFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kFluxArchitecture; }
  ModelRole role() const override { return ModelRole::kDenoiser; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) == kConfigClass) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    // img_in / txt_in / vector_in / final_layer.linear in original naming;
    // SD3, also with a context embedder, has no x_embedder.
    return count_canonical_tensors(checkpoint, flux_canonical_name,
                                   {"x_embedder.weight", "context_embedder.weight",
                                    "time_text_embed.text_embedder.linear_1.weight", "proj_out.weight"}) == 4;
  }

  std::vector<std::string> config_classes() const override { return {std::string(kConfigClass)}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(FluxConfig config, parse_flux_config(json, path));
    return std::unique_ptr<LoadRecipe>(
        new FluxRecipe(config, flux_default_schedule(config), absl::StrCat("config from ", path)));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    FluxConfig config;
    std::string note;
    if (config_class_name(checkpoint) == kConfigClass) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, flux_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The counts size the table: they must be the checkpoint's own.
      const std::vector<std::string> names = canonical_tensor_names(checkpoint, flux_canonical_name);
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_layers", config.num_layers,
                                                      checkpoint.path(), names, "transformer_blocks."));
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_single_layers",
                                                      config.num_single_layers, checkpoint.path(), names,
                                                      "single_transformer_blocks."));
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      const CanonicalShapes shapes(checkpoint, flux_canonical_name);
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_flux_config(shapes.lookup(), shapes.names(), checkpoint.path()));
      note = "config inferred from shapes; name a config.json to override";
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(ScheduleOptions schedule, checkpoint_schedule(checkpoint, flux_default_schedule(config)));
    return std::unique_ptr<LoadRecipe>(new FluxRecipe(config, schedule, std::move(note)));
  }
};

}  // namespace

const ModelFamily* flux_family() {
  static const ModelFamily* const family = new FluxFamily();
  return family;
}

}  // namespace diffusiond
