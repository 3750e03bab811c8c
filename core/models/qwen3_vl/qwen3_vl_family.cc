#include "core/models/qwen3_vl/qwen3_vl_family.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/models/common/qwen_vl_config.h"
#include "core/models/common/text_encoder_recipe.h"
#include "core/models/config_limits.h"
#include "core/models/qwen3_vl/qwen3_vl_config.h"
#include "core/models/qwen3_vl/qwen3_vl_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class Qwen3VlRecipe final : public TextEncoderRecipe<Qwen3VlConfig, Qwen3VlModel> {
 public:
  Qwen3VlRecipe(const Qwen3VlConfig& config, std::shared_ptr<const Tokenizer> tokenizer, std::string note)
      : TextEncoderRecipe(qwen_tower_parameter_table(config.tower_spec()), config, std::move(tokenizer),
                          std::move(note)) {}

  std::string describe() const override {
    const Qwen3VlConfig& c = config_;
    return absl::StrCat("Qwen3-VL text tower: hidden ", c.hidden_size, ", ", c.num_hidden_layers, " layers, ",
                        c.num_attention_heads, " heads (", c.num_key_value_heads, " kv) of ", c.head_dim,
                        c.attention_bias ? ", attention biases" : "", ", intermediate ", c.intermediate_size,
                        ", vocab ", c.vocab_size, ", rope_theta ", c.rope_theta, ", interleaved M-RoPE [",
                        c.mrope_section[0], ", ", c.mrope_section[1], ", ", c.mrope_section[2], "]; ", note_);
  }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return qwen3_vl_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return qwen_tower_precision_declaration(); }
};

class Qwen3VlFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kQwen3VlArchitecture; }
  ModelRole role() const override { return ModelRole::kTextEncoder; }

  // Recognised by model_type alone, so that a Qwen3-VL config the port
  // cannot run is refused by recipe() with the reason, not as an unknown
  // model.
  bool recognizes(const Checkpoint& checkpoint) const override {
    const nlohmann::json& config = checkpoint.config();
    return config.is_object() && config.value("model_type", nlohmann::json()) == nlohmann::json("qwen3_vl");
  }

  // The tokenizer comes from the model's folder, or the pipeline's
  // tokenizer/ beside it (tokenizer_folders).
  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(Qwen3VlConfig config,
                                qwen3_vl_config_from_json(checkpoint.config(), checkpoint.config_path()));
    // The count sizes the table: it must be the checkpoint's own.
    DIFFUSIOND_RETURN_IF_ERROR(
        check_declared_count(checkpoint.config_path(), "num_hidden_layers", config.num_hidden_layers, checkpoint.path(),
                             canonical_tensor_names(checkpoint, qwen3_vl_canonical_name), "layers."));
    DIFFUSIOND_ASSIGN_OR_RETURN(FoundTokenizer found, find_qwen_vl_tokenizer(checkpoint));
    return std::unique_ptr<LoadRecipe>(new Qwen3VlRecipe(config, std::move(found.tokenizer), found.note));
  }

  std::vector<std::string> config_classes() const override {
    return {"Qwen3VLModel", "Qwen3VLForConditionalGeneration"};
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(Qwen3VlConfig config, parse_qwen3_vl_config(json, path));
    return std::unique_ptr<LoadRecipe>(new Qwen3VlRecipe(config, nullptr, "sized without a tokenizer"));
  }
};

}  // namespace

std::optional<std::string> qwen3_vl_canonical_name(absl::string_view name) {
  return qwen_vl_canonical_name(name, {"model.language_model.", "language_model."});
}

const ModelFamily* qwen3_vl_family() {
  static const ModelFamily* const family = new Qwen3VlFamily();
  return family;
}

}  // namespace diffusiond
