#include "core/models/cosmos/cosmos_family.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/config_limits.h"
#include "core/models/cosmos/cosmos_config.h"
#include "core/models/cosmos/cosmos_model.h"
#include "core/models/cosmos/cosmos_params.h"
#include "core/models/denoiser_activations.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kCosmosConfigClass = "CosmosTransformer3DModel";

class CosmosRecipe final : public TableRecipe {
 public:
  CosmosRecipe(const CosmosConfig& config, const ScheduleOptions& schedule, std::string config_note)
      : TableRecipe(cosmos_parameter_table(config)),
        config_(config),
        schedule_(schedule),
        config_note_(std::move(config_note)) {}

  std::string describe() const override { return absl::StrCat(config_.describe(), "; ", config_note_); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return cosmos_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return cosmos_precision_declaration(); }
  // Unpacked latents of in_channels; the model patchifies itself.
  LatentGeometry latent_geometry() const override { return {config_.in_channels, 0}; }
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    return denoiser_activations(config_, query, AttentionOptions{}, 0).bytes;
  }

  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<CosmosModel> model,
                                CosmosModel::create(config_, std::move(weights), schedule_));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const CosmosConfig config_;
  const ScheduleOptions schedule_;
  const std::string config_note_;  // where the config came from, or what was assumed
};

class CosmosFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kCosmosArchitecture; }
  ModelRole role() const override { return ModelRole::kDenoiser; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) == kCosmosConfigClass) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    // The patch embedding, the time MLP and its norm, the AdaLN-LoRA and the
    // final layer's: together, only Cosmos has them.
    return count_canonical_tensors(checkpoint, cosmos_canonical_name,
                                   {"patch_embed.proj.weight", "time_embed.t_embedder.linear_1.weight",
                                    "time_embed.norm.weight", "transformer_blocks.0.norm1.linear_1.weight",
                                    "norm_out.linear_1.weight"}) == 5;
  }

  std::vector<std::string> config_classes() const override { return {std::string(kCosmosConfigClass)}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(CosmosConfig config, parse_cosmos_config(json, path));
    return std::unique_ptr<LoadRecipe>(
        new CosmosRecipe(config, cosmos_default_schedule(), absl::StrCat("config from ", path)));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    CosmosConfig config;
    std::string note;
    if (config_class_name(checkpoint) == kCosmosConfigClass) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, cosmos_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The count sizes the table: it must be the checkpoint's own.
      const std::vector<std::string> names = canonical_tensor_names(checkpoint, cosmos_canonical_name);
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_layers", config.num_layers,
                                                      checkpoint.path(), names, "transformer_blocks."));
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      const CanonicalShapes shapes(checkpoint, cosmos_canonical_name);
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_cosmos_config(shapes.lookup(), shapes.names(), checkpoint.path()));
      note = absl::StrCat("config inferred from shapes; assumed ", cosmos_assumed_values(config));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(ScheduleOptions schedule, checkpoint_schedule(checkpoint, cosmos_default_schedule()));
    return std::unique_ptr<LoadRecipe>(new CosmosRecipe(config, schedule, std::move(note)));
  }
};

}  // namespace

const ModelFamily* cosmos_family() {
  static const ModelFamily* const family = new CosmosFamily();
  return family;
}

}  // namespace diffusiond
