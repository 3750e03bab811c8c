#include "core/models/krea2/krea2_family.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/models/config_limits.h"
#include "core/models/denoiser_activations.h"
#include "core/models/krea2/krea2_model.h"
#include "core/models/krea2/krea2_params.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kKrea2ConfigClass = "Krea2Transformer2DModel";
constexpr absl::string_view kKrea2PipelineClass = "Krea2Pipeline";

// The pipeline's is_distilled, which decides the schedule's mu: read from
// the model_index.json of the pipeline folder holding this transformer
// folder (<pipeline>/transformer), when that is a Krea2Pipeline's. False
// without one; INVALID_ARGUMENT for a malformed one.
absl::StatusOr<bool> krea2_pipeline_is_distilled(const Checkpoint& checkpoint) {
  if (checkpoint.layout() != CheckpointLayout::kDiffusersFolder) return false;
  std::filesystem::path folder(checkpoint.path());
  if (!folder.has_filename()) folder = folder.parent_path();  // a trailing '/'
  const std::string path = (folder.parent_path() / "model_index.json").string();
  absl::StatusOr<std::string> text = read_text_file(path);
  if (absl::IsNotFound(text.status())) return false;
  if (!text.ok()) return text.status();
  DIFFUSIOND_ASSIGN_OR_RETURN(const nlohmann::json index, parse_json_strict(*text, path));
  if (!index.is_object() || !index.contains("_class_name") ||
      index.at("_class_name") != nlohmann::json(std::string(kKrea2PipelineClass))) {
    return false;
  }
  bool distilled = false;
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(index, "is_distilled", path, &distilled));
  return distilled;
}

class Krea2Recipe final : public TableRecipe {
 public:
  Krea2Recipe(const Krea2Config& config, const ScheduleOptions& schedule, std::string config_note)
      : TableRecipe(krea2_parameter_table(config)),
        config_(config),
        schedule_(schedule),
        config_note_(std::move(config_note)) {}

  std::string describe() const override { return absl::StrCat(config_.describe(), "; ", config_note_); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return krea2_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return krea2_precision_declaration(); }
  // The unpacked latent channels; the spatial factor is the decoder's.
  LatentGeometry latent_geometry() const override { return {config_.in_channels / 4, 0}; }
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    return denoiser_activations(config_, query, AttentionOptions{}, 0).bytes;
  }

  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<Krea2Model> model,
                                Krea2Model::create(config_, std::move(weights), schedule_));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const Krea2Config config_;
  const ScheduleOptions schedule_;
  const std::string config_note_;  // where the config came from
};

class Krea2Family final : public ModelFamily {
 public:
  absl::string_view name() const override { return kKrea2Architecture; }
  ModelRole role() const override { return ModelRole::kDenoiser; }

  // Only by config class: without a converter upstream there is no
  // original single-file naming to recognise.
  bool recognizes(const Checkpoint& checkpoint) const override {
    return config_class_name(checkpoint) == kKrea2ConfigClass;
  }

  std::vector<std::string> config_classes() const override { return {std::string(kKrea2ConfigClass)}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(Krea2Config config, parse_krea2_config(json, path));
    return std::unique_ptr<LoadRecipe>(
        new Krea2Recipe(config, krea2_default_schedule(), absl::StrCat("config from ", path)));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) != kKrea2ConfigClass) {
      return absl::InvalidArgumentError(absl::StrCat(checkpoint.path(), ": Krea 2 needs its config.json (class ",
                                                     kKrea2ConfigClass, "); no single-file layout exists"));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(Krea2Config config,
                                krea2_config_from_json(checkpoint.config(), checkpoint.config_path()));
    // The counts size the table: they must be the checkpoint's own.
    const std::vector<std::string> names = canonical_tensor_names(checkpoint, krea2_canonical_name);
    DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_layers", config.num_layers,
                                                    checkpoint.path(), names, "transformer_blocks."));
    DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_layerwise_text_blocks",
                                                    config.num_layerwise_text_blocks, checkpoint.path(), names,
                                                    "text_fusion.layerwise_blocks."));
    DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_refiner_text_blocks",
                                                    config.num_refiner_text_blocks, checkpoint.path(), names,
                                                    "text_fusion.refiner_blocks."));
    DIFFUSIOND_ASSIGN_OR_RETURN(ScheduleOptions schedule, checkpoint_schedule(checkpoint, krea2_default_schedule()));
    DIFFUSIOND_ASSIGN_OR_RETURN(const bool distilled, krea2_pipeline_is_distilled(checkpoint));
    return std::unique_ptr<LoadRecipe>(
        new Krea2Recipe(config, krea2_schedule(schedule, distilled),
                        absl::StrCat("config from ", checkpoint.config_path(),
                                     distilled ? "; distilled (the pipeline's is_distilled: mu fixed at 1.15)" : "")));
  }
};

}  // namespace

const ModelFamily* krea2_family() {
  static const ModelFamily* const family = new Krea2Family();
  return family;
}

}  // namespace diffusiond
