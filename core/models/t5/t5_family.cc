#include "core/models/t5/t5_family.h"

#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/models/common/text_encoder_recipe.h"
#include "core/models/config_limits.h"
#include "core/models/t5/t5_config.h"
#include "core/models/t5/t5_model.h"
#include "core/models/t5/t5_params.h"
#include "core/models/text_encoder.h"
#include "core/text/sentencepiece_files.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class T5Recipe final : public TextEncoderRecipe<T5Config, T5Encoder> {
 public:
  T5Recipe(const T5Config& config, bool has_shared, std::shared_ptr<const Tokenizer> tokenizer, std::string note)
      : TextEncoderRecipe(t5_parameter_table(config), config, std::move(tokenizer), std::move(note)),
        has_shared_(has_shared) {}

  std::string describe() const override { return absl::StrCat(config_.describe(), "; ", note_); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return t5_canonical_name(name, has_shared_);
  }
  PrecisionDeclaration declaration() const override { return t5_precision_declaration(); }

 private:
  const bool has_shared_;  // the checkpoint names the embedding "shared.weight"
};

// Whether the config names a T5 or UMT5 model. Compared as JSON: value()
// with a string default throws on a non-string.
bool t5_config(const Checkpoint& checkpoint) {
  const nlohmann::json& config = checkpoint.config();
  if (!config.is_object()) return false;
  const nlohmann::json type = config.value("model_type", nlohmann::json());
  return type == nlohmann::json("t5") || type == nlohmann::json("umt5");
}

bool has_shared(const Checkpoint& checkpoint) { return checkpoint.find(kT5EmbeddingName) != nullptr; }

class T5Family final : public ModelFamily {
 public:
  absl::string_view name() const override { return kT5Architecture; }
  ModelRole role() const override { return ModelRole::kTextEncoder; }

  // By model_type alone when there is a config, so that a T5 config the
  // port cannot run is refused by recipe() with the reason; for a single
  // file, by the encoder's first block, final norm and embedding.
  bool recognizes(const Checkpoint& checkpoint) const override {
    if (t5_config(checkpoint)) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    const bool shared = has_shared(checkpoint);
    bool q = false, norm = false, embedding = false;
    for (const TensorRecord& t : checkpoint.tensors()) {
      const std::optional<std::string> name = t5_canonical_name(t.name, shared);
      if (!name.has_value()) continue;
      q |= *name == "encoder.block.0.layer.0.SelfAttention.q.weight";
      norm |= *name == "encoder.final_layer_norm.weight";
      embedding |= *name == kT5EmbeddingName;
    }
    return q && norm && embedding;
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    const bool shared = has_shared(checkpoint);
    const auto canonical = [shared](absl::string_view name) { return t5_canonical_name(name, shared); };
    const std::vector<std::string> names = canonical_tensor_names(checkpoint, canonical);
    T5Config config;
    std::string note;
    if (t5_config(checkpoint)) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, t5_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The count sizes the table: it must be the checkpoint's own.
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_layers", config.num_layers,
                                                      checkpoint.path(), names, "encoder.block."));
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      std::map<std::string, std::vector<int64_t>, std::less<>> shapes;
      for (const TensorRecord& t : checkpoint.tensors()) {
        if (std::optional<std::string> name = canonical(t.name)) shapes[*name] = t.shape;
      }
      const auto shape_of = [&](absl::string_view name) -> std::optional<std::vector<int64_t>> {
        const auto it = shapes.find(name);
        if (it == shapes.end()) return std::nullopt;
        return it->second;
      };
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_t5_config(shape_of, names, checkpoint.path()));
      note = "config inferred from shapes (max distance 128); name a config.json to override";
    }
    // Its folder, or the pipeline's tokenizer/ or tokenizer_2/.
    DIFFUSIOND_ASSIGN_OR_RETURN(FoundTokenizer tokenizer,
                                find_sentencepiece_tokenizer(tokenizer_folders(checkpoint)));
    return std::unique_ptr<LoadRecipe>(new T5Recipe(config, shared, std::move(tokenizer.tokenizer),
                                                    absl::StrCat(note, "; ", tokenizer.note)));
  }

  std::vector<std::string> config_classes() const override {
    return {"T5EncoderModel", "UMT5EncoderModel", "T5Model", "UMT5Model", "T5ForConditionalGeneration",
            "UMT5ForConditionalGeneration"};
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(T5Config config, parse_t5_config(json, path));
    return std::unique_ptr<LoadRecipe>(new T5Recipe(config, true, nullptr, "sized without a tokenizer"));
  }
};

}  // namespace

const ModelFamily* t5_family() {
  static const ModelFamily* const family = new T5Family();
  return family;
}

}  // namespace diffusiond
