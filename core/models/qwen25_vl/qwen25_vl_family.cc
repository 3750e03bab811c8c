#include "core/models/qwen25_vl/qwen25_vl_family.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/models/common/canonical_shapes.h"
#include "core/models/common/qwen_vl_config.h"
#include "core/models/common/text_encoder_recipe.h"
#include "core/models/config_limits.h"
#include "core/models/qwen25_vl/qwen25_vl_config.h"
#include "core/models/qwen25_vl/qwen25_vl_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class Qwen25VlRecipe final : public TextEncoderRecipe<Qwen25VlConfig, Qwen25VlModel> {
 public:
  Qwen25VlRecipe(const Qwen25VlConfig& config, std::shared_ptr<const Tokenizer> tokenizer, std::string note)
      : TextEncoderRecipe(qwen_tower_parameter_table(config.tower_spec()), config, std::move(tokenizer),
                          std::move(note)) {}

  std::string describe() const override {
    const Qwen25VlConfig& c = config_;
    return absl::StrCat("Qwen2.5-VL text tower: hidden ", c.hidden_size, ", ", c.num_hidden_layers, " layers, ",
                        c.num_attention_heads, " heads (", c.num_key_value_heads, " kv) of ", c.head_dim(),
                        ", intermediate ", c.intermediate_size, ", vocab ", c.vocab_size, ", rope_theta ", c.rope_theta,
                        ", M-RoPE [", c.mrope_section[0], ", ", c.mrope_section[1], ", ", c.mrope_section[2], "]; ",
                        note_);
  }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return qwen25_vl_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return qwen_tower_precision_declaration(); }
};

// Whether the checkpoint's config (its folder's, or one beside a single
// file) is a Qwen2.5-VL one. Compared as JSON: value() with a string
// default throws on a non-string.
bool qwen25_vl_config(const Checkpoint& checkpoint) {
  const nlohmann::json& config = checkpoint.config();
  return config.is_object() && config.value("model_type", nlohmann::json()) == nlohmann::json("qwen2_5_vl");
}

class Qwen25VlFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kQwen25VlArchitecture; }
  ModelRole role() const override { return ModelRole::kTextEncoder; }

  // By model_type alone when there is such a config, so that a Qwen2.5-VL
  // config the port cannot run is refused by recipe() with the reason; for
  // a single file (ComfyUI's qwen_2.5_vl_7b*.safetensors), by the tower's
  // embedding, final norm and the q/k/v biases that tell it from Qwen3.
  bool recognizes(const Checkpoint& checkpoint) const override {
    if (qwen25_vl_config(checkpoint)) return true;
    if (checkpoint.layout() == CheckpointLayout::kDiffusersFolder) return false;
    return count_canonical_tensors(checkpoint, qwen25_vl_canonical_name,
                                   {"embed_tokens.weight", "norm.weight", "layers.0.self_attn.k_proj.bias"}) == 3 &&
           count_canonical_tensors(checkpoint, qwen25_vl_canonical_name, {"layers.0.self_attn.q_norm.weight"}) == 0;
  }

  // The config from a config.json of this family (the folder's, or one
  // beside a single file), else inferred from the shapes. The tokenizer
  // comes from the model's folder, or the pipeline's tokenizer/ beside it
  // (tokenizer_folders).
  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    const std::vector<std::string> names = canonical_tensor_names(checkpoint, qwen25_vl_canonical_name);
    Qwen25VlConfig config;
    std::string note;
    if (qwen25_vl_config(checkpoint)) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, qwen25_vl_config_from_json(checkpoint.config(), checkpoint.config_path()));
      // The count sizes the table: it must be the checkpoint's own.
      DIFFUSIOND_RETURN_IF_ERROR(check_declared_count(checkpoint.config_path(), "num_hidden_layers",
                                                      config.num_hidden_layers, checkpoint.path(), names, "layers."));
      note = absl::StrCat("config from ", checkpoint.config_path());
    } else {
      const CanonicalShapes shapes(checkpoint, qwen25_vl_canonical_name);
      DIFFUSIOND_ASSIGN_OR_RETURN(config, infer_qwen25_vl_config(shapes.lookup(), names, checkpoint.path()));
      note = absl::StrCat("config inferred from shapes (", kQwen25VlInferredAssumptions,
                          " assumed); name a config.json to override");
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(FoundTokenizer found, find_qwen_vl_tokenizer(checkpoint));
    return std::unique_ptr<LoadRecipe>(
        new Qwen25VlRecipe(config, std::move(found.tokenizer), absl::StrCat(note, "; ", found.note)));
  }

  std::vector<std::string> config_classes() const override {
    return {"Qwen2_5_VLForConditionalGeneration", "Qwen2_5_VLModel"};
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(Qwen25VlConfig config, parse_qwen25_vl_config(json, path));
    return std::unique_ptr<LoadRecipe>(new Qwen25VlRecipe(config, nullptr, "sized without a tokenizer"));
  }
};

}  // namespace

std::optional<std::string> qwen25_vl_canonical_name(absl::string_view name) {
  return qwen_vl_canonical_name(name, {"model.language_model.", "model."});
}

const ModelFamily* qwen25_vl_family() {
  static const ModelFamily* const family = new Qwen25VlFamily();
  return family;
}

}  // namespace diffusiond
