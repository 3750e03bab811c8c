#include "core/models/clip/clip_family.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/models/clip/clip_config.h"
#include "core/models/clip/clip_model.h"
#include "core/models/clip/clip_params.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/common/text_encoder_recipe.h"
#include "core/models/config_limits.h"
#include "core/models/text_encoder.h"
#include "core/text/clip_tokenizer_files.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class ClipRecipe final : public TextEncoderRecipe<ClipTextConfig, ClipTextModel> {
 public:
  ClipRecipe(const ClipTextConfig& config, std::shared_ptr<const Tokenizer> tokenizer, std::string note)
      : TextEncoderRecipe(clip_parameter_table(config), config, std::move(tokenizer), std::move(note)) {}

  std::string describe() const override { return absl::StrCat(config_.describe(), "; ", note_); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return clip_canonical_name(name, config_.with_projection);
  }
  PrecisionDeclaration declaration() const override { return clip_precision_declaration(); }
};

// True when `config_json` says model_type "clip_text_model". Compared as
// JSON: value() with a string default throws on a non-string.
bool is_clip_text_config(const Checkpoint& checkpoint) {
  const nlohmann::json& config = checkpoint.config();
  return config.is_object() && config.value("model_type", nlohmann::json()) == nlohmann::json("clip_text_model");
}

std::vector<std::string> tensor_names(const Checkpoint& checkpoint) {
  std::vector<std::string> names;
  for (const TensorRecord& t : checkpoint.tensors()) names.push_back(t.name);
  return names;
}

class ClipFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kClipTextArchitecture; }
  ModelRole role() const override { return ModelRole::kTextEncoder; }

  // A config is recognised by model_type alone, so that a CLIP config the
  // port cannot run is refused by recipe() with the reason.
  bool recognizes(const Checkpoint& checkpoint) const override {
    if (is_clip_text_config(checkpoint)) return true;
    return checkpoint.layout() != CheckpointLayout::kDiffusersFolder &&
           is_clip_text_checkpoint(tensor_names(checkpoint));
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    ClipTextConfig config;
    std::string note;
    if (is_clip_text_config(checkpoint)) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, clip_text_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The count sizes the table: it must be the checkpoint's own.
      const std::vector<std::string> names = canonical_tensor_names(
          checkpoint, [&](absl::string_view n) { return clip_canonical_name(n, config.with_projection); });
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_hidden_layers",
                                                      config.num_hidden_layers, checkpoint.path(), names,
                                                      "text_model.encoder.layers."));
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      const CanonicalShapes shapes(
          checkpoint, [](absl::string_view name) { return clip_canonical_name(name, /*keep_projection=*/false); });
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_clip_text_config(shapes.lookup(), shapes.names(), checkpoint.path()));
      note = "config inferred from shapes; name a config.json to override";
    }
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const std::string& folder : tokenizer_folders(checkpoint)) {
      if (!fs::exists(fs::path(folder) / "vocab.json", ec) && !fs::exists(fs::path(folder) / "tokenizer.json", ec)) {
        continue;
      }
      DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<ClipTokenizer> tokenizer, load_clip_tokenizer(folder));
      return std::unique_ptr<LoadRecipe>(
          new ClipRecipe(config, std::move(tokenizer), absl::StrCat(note, "; tokenizer from ", folder)));
    }
    return std::unique_ptr<LoadRecipe>(new ClipRecipe(config, nullptr, absl::StrCat(note, "; no tokenizer found")));
  }

  std::vector<std::string> config_classes() const override { return {"CLIPTextModel", "CLIPTextModelWithProjection"}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(ClipTextConfig config, parse_clip_text_config(json, path));
    return std::unique_ptr<LoadRecipe>(
        new ClipRecipe(config, nullptr, absl::StrCat("config from ", path, "; sized without a tokenizer")));
  }
};

}  // namespace

const ModelFamily* clip_family() {
  static const ModelFamily* const family = new ClipFamily();
  return family;
}

}  // namespace diffusiond
