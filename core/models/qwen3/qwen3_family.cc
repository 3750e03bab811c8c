#include "core/models/qwen3/qwen3_family.h"

#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "core/models/common/text_encoder_recipe.h"
#include "core/models/config_limits.h"
#include "core/models/qwen3/qwen3_config.h"
#include "core/models/qwen3/qwen3_model.h"
#include "core/models/qwen3/qwen3_params.h"
#include "core/text/tokenizer_files.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class Qwen3Recipe final : public TextEncoderRecipe<Qwen3Config, Qwen3Model> {
 public:
  Qwen3Recipe(const Qwen3Config& config, std::shared_ptr<const Tokenizer> tokenizer, std::string tokenizer_note)
      : TextEncoderRecipe(qwen3_parameter_table(config), config, std::move(tokenizer), std::move(tokenizer_note)) {}

  std::string describe() const override {
    const Qwen3Config& c = config_;
    return absl::StrCat("Qwen3: hidden ", c.hidden_size, ", ", c.num_hidden_layers, " layers, ", c.num_attention_heads,
                        " heads (", c.num_key_value_heads, " kv) of ", c.head_dim, ", intermediate ",
                        c.intermediate_size, ", vocab ", c.vocab_size, ", rope_theta ", c.rope_theta, "; ", note_);
  }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return qwen3_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return qwen3_precision_declaration(); }
};

class Qwen3Family final : public ModelFamily {
 public:
  absl::string_view name() const override { return kQwen3Architecture; }
  ModelRole role() const override { return ModelRole::kTextEncoder; }

  // Recognised by model_type alone, so that a Qwen3 config the port cannot
  // run is refused by recipe() with the reason, not as an unknown model.
  bool recognizes(const Checkpoint& checkpoint) const override {
    const nlohmann::json& config = checkpoint.config();
    // Compared as JSON: value() with a string default throws on a non-string.
    return config.is_object() && config.value("model_type", nlohmann::json()) == nlohmann::json("qwen3");
  }

  // The tokenizer comes from the model's folder, or a sibling tokenizer/
  // folder as a diffusers pipeline lays them out.
  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(Qwen3Config config,
                                qwen3_config_from_json(checkpoint.config(), checkpoint.config_path()));
    // The count sizes the table: it must be the checkpoint's own.
    DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_hidden_layers",
                                                    config.num_hidden_layers, checkpoint.path(),
                                                    canonical_tensor_names(checkpoint, qwen3_canonical_name),
                                                    "layers."));
    namespace fs = std::filesystem;
    const fs::path path(checkpoint.path());
    const fs::path dir = checkpoint.layout() == CheckpointLayout::kDiffusersFolder ? path : path.parent_path();
    std::error_code ec;
    for (const fs::path& candidate : {dir, dir.parent_path() / "tokenizer"}) {
      if (!fs::exists(candidate / "tokenizer.json", ec) && !fs::exists(candidate / "vocab.json", ec)) continue;
      DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> tokenizer, load_tokenizer(candidate.string()));
      return std::unique_ptr<LoadRecipe>(
          new Qwen3Recipe(config, std::move(tokenizer), absl::StrCat("tokenizer from ", candidate.string())));
    }
    return std::unique_ptr<LoadRecipe>(new Qwen3Recipe(config, nullptr, "no tokenizer found"));
  }

  std::vector<std::string> config_classes() const override { return {"Qwen3ForCausalLM", "Qwen3Model"}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(Qwen3Config config, parse_qwen3_config(json, path));
    return std::unique_ptr<LoadRecipe>(new Qwen3Recipe(config, nullptr, "sized without a tokenizer"));
  }
};

}  // namespace

const ModelFamily* qwen3_family() {
  static const ModelFamily* const family = new Qwen3Family();
  return family;
}

}  // namespace diffusiond
