#include "core/models/qwen_image/qwen_image_family.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/config_limits.h"
#include "core/models/denoiser_activations.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/models/qwen_image/qwen_image_params.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kQwenImageConfigClass = "QwenImageTransformer2DModel";

class QwenImageRecipe final : public TableRecipe {
 public:
  QwenImageRecipe(const QwenImageConfig& config, const ScheduleOptions& schedule, std::string config_note)
      : TableRecipe(qwen_image_parameter_table(config)),
        config_(config),
        schedule_(schedule),
        config_note_(std::move(config_note)) {}

  std::string describe() const override { return absl::StrCat(config_.describe(), "; ", config_note_); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return qwen_image_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return qwen_image_precision_declaration(); }
  // Packed patch x patch: in_channels = patch² × latent channels.
  LatentGeometry latent_geometry() const override {
    return {config_.in_channels / (config_.patch_size * config_.patch_size), 0};
  }
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    return denoiser_activations(config_, query, AttentionOptions{}, 0).bytes;
  }

  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<QwenImageModel> model,
                                QwenImageModel::create(config_, std::move(weights), schedule_));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const QwenImageConfig config_;
  const ScheduleOptions schedule_;
  const std::string config_note_;  // where the config came from
};

class QwenImageFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kQwenImageArchitecture; }
  ModelRole role() const override { return ModelRole::kDenoiser; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) == kQwenImageConfigClass) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    // txt_norm and the blocks' img_mod are Qwen-Image's own (FLUX's
    // original files have img_in / txt_in too, but neither of these).
    return count_canonical_tensors(checkpoint, qwen_image_canonical_name,
                                   {"img_in.weight", "txt_in.weight", "txt_norm.weight",
                                    "transformer_blocks.0.img_mod.1.weight"}) == 4;
  }

  std::vector<std::string> config_classes() const override { return {std::string(kQwenImageConfigClass)}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(QwenImageConfig config, parse_qwen_image_config(json, path));
    return std::unique_ptr<LoadRecipe>(
        new QwenImageRecipe(config, qwen_image_default_schedule(), absl::StrCat("config from ", path)));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    QwenImageConfig config;
    std::string note;
    if (config_class_name(checkpoint) == kQwenImageConfigClass) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, qwen_image_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The count sizes the table: it must be the checkpoint's own.
      const std::vector<std::string> names = canonical_tensor_names(checkpoint, qwen_image_canonical_name);
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_layers", config.num_layers,
                                                      checkpoint.path(), names, "transformer_blocks."));
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      const CanonicalShapes shapes(checkpoint, qwen_image_canonical_name);
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_qwen_image_config(shapes.lookup(), shapes.names(), checkpoint.path()));
      note = "config inferred from shapes; name a config.json to override";
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(ScheduleOptions schedule,
                                checkpoint_schedule(checkpoint, qwen_image_default_schedule()));
    return std::unique_ptr<LoadRecipe>(new QwenImageRecipe(config, schedule, std::move(note)));
  }
};

}  // namespace

const ModelFamily* qwen_image_family() {
  static const ModelFamily* const family = new QwenImageFamily();
  return family;
}

}  // namespace diffusiond
