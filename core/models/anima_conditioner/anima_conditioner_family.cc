#include "core/models/anima_conditioner/anima_conditioner_family.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/models/anima_conditioner/anima_conditioner_config.h"
#include "core/models/anima_conditioner/anima_conditioner_model.h"
#include "core/models/anima_conditioner/anima_conditioner_params.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/config_limits.h"
#include "core/text/sentencepiece_files.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kAnimaConditionerConfigClass = "AnimaTextConditioner";

// Where the T5 tokenizer may be: the model's own folder, then the
// pipeline's t5_tokenizer/ beside a text_conditioner/ folder, or beside a
// single file.
std::vector<std::string> anima_tokenizer_folders(const Checkpoint& checkpoint) {
  namespace fs = std::filesystem;
  const fs::path path(checkpoint.path());
  if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) {
    const fs::path dir = path.has_filename() ? path : path.parent_path();
    return {dir.string(), (dir.parent_path() / "t5_tokenizer").string()};
  }
  return {path.parent_path().string(), (path.parent_path() / "t5_tokenizer").string()};
}

class AnimaConditionerRecipe final : public TableRecipe {
 public:
  AnimaConditionerRecipe(const AnimaConditionerConfig& config, std::shared_ptr<const Tokenizer> tokenizer,
                         std::string note)
      : TableRecipe(anima_conditioner_parameter_table(config)),
        config_(config),
        tokenizer_(std::move(tokenizer)),
        note_(std::move(note)) {}

  std::string describe() const override { return absl::StrCat(config_.describe(), "; ", note_); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return anima_conditioner_canonical_name(name);
  }
  // Upstream declares nothing: the default patterns keep the norms.
  PrecisionDeclaration declaration() const override { return {}; }
  // A call over query.text_tokens Qwen rows and T5 tokens.
  int64_t least_call_bytes(const ActivationQuery& query) const override {
    return anima_conditioner_activation_bytes(config_, query.compute_dtype, query.text_tokens, query.text_tokens, 0);
  }
  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<AnimaConditionerModel> model,
                                AnimaConditionerModel::create(config_, std::move(weights), tokenizer_));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const AnimaConditionerConfig config_;
  const std::shared_ptr<const Tokenizer> tokenizer_;  // may be null
  const std::string note_;  // where the config and the tokenizer came from
};

// True when `checkpoint` holds the adapter under one of the single file's
// prefixes.
bool holds_prefixed_adapter(const Checkpoint& checkpoint) {
  for (const TensorRecord& t : checkpoint.tensors()) {
    if (anima_conditioner_canonical_name(t.name) == "embed.weight" && t.name != "embed.weight") return true;
  }
  return false;
}

class AnimaConditionerFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kAnimaConditionerArchitecture; }
  ModelRole role() const override { return ModelRole::kTextConditioner; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (config_class_name(checkpoint) == kAnimaConditionerConfigClass) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    return holds_prefixed_adapter(checkpoint);
  }

  std::vector<std::string> config_classes() const override { return {std::string(kAnimaConditionerConfigClass)}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(AnimaConditionerConfig config, parse_anima_conditioner_config(json, path));
    return std::unique_ptr<LoadRecipe>(
        new AnimaConditionerRecipe(config, nullptr, absl::StrCat("config from ", path, "; sized without a tokenizer")));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    AnimaConditionerConfig config;
    std::string note;
    const CanonicalShapes shapes(checkpoint, anima_conditioner_canonical_name);
    const bool has_config = config_class_name(checkpoint) == kAnimaConditionerConfigClass;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config,
                                  anima_conditioner_config_from_json(checkpoint.config(), checkpoint.config_path()));
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_layers", config.num_layers,
                                                      checkpoint.path(), shapes.names(), "blocks."));
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      // A single file: the shapes settle every field but
      // min_sequence_length, as upstream's converter infers them; a config
      // (one naming only the class chose this family) may give it, and
      // what else it gives must agree with the shapes.
      DIFFUSIOND_ASSIGN_OR_RETURN(config,
                                  infer_anima_conditioner_config(shapes.lookup(), shapes.names(), checkpoint.path()));
      if (has_config) {
        DIFFUSIOND_ASSIGN_OR_RETURN(AnimaConditionerConfig given, anima_conditioner_config_from_json(
                                                                      checkpoint.config(), checkpoint.config_path()));
        config.min_sequence_length = given.min_sequence_length;
        const nlohmann::json inferred = to_json(config);
        for (const auto& [field, value] : inferred.items()) {
          if (checkpoint.config().contains(field) && checkpoint.config().at(field) != value) {
            return absl::InvalidArgumentError(absl::StrCat(checkpoint.config_path(), ": ", field, " is ",
                                                           checkpoint.config().at(field).dump(), ", but the adapter in ",
                                                           checkpoint.path(), " has ", value.dump()));
          }
        }
      }
      note = absl::StrCat("config inferred from the adapter's shapes; min_sequence_length ", config.min_sequence_length,
                          has_config && checkpoint.config().contains("min_sequence_length")
                              ? absl::StrCat(" from ", checkpoint.config_path())
                              : std::string(" (Anima's default)"));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(FoundTokenizer tokenizer,
                                find_sentencepiece_tokenizer(anima_tokenizer_folders(checkpoint)));
    return std::unique_ptr<LoadRecipe>(
        new AnimaConditionerRecipe(config, std::move(tokenizer.tokenizer), absl::StrCat(note, "; ", tokenizer.note)));
  }
};

}  // namespace

const ModelFamily* anima_conditioner_family() {
  static const ModelFamily* const family = new AnimaConditionerFamily();
  return family;
}

}  // namespace diffusiond
