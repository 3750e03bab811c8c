#include "core/models/qwen3/qwen3_family.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "core/models/qwen3/qwen3_config.h"
#include "core/models/qwen3/qwen3_model.h"
#include "core/models/qwen3/qwen3_params.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class Qwen3Recipe final : public TableRecipe {
 public:
  explicit Qwen3Recipe(const Qwen3Config& config) : TableRecipe(qwen3_parameter_table(config)), config_(config) {}

  std::string describe() const override {
    const Qwen3Config& c = config_;
    return absl::StrCat("Qwen3: hidden ", c.hidden_size, ", ", c.num_hidden_layers, " layers, ",
                        c.num_attention_heads, " heads (", c.num_key_value_heads,
                        " kv) of ", c.head_dim, ", intermediate ", c.intermediate_size,
                        ", vocab ", c.vocab_size, ", rope_theta ", c.rope_theta);
  }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return qwen3_canonical_name(name);
  }
  PrecisionDeclaration declaration() const override { return qwen3_precision_declaration(); }

  absl::StatusOr<std::unique_ptr<Model>> build(
      std::unique_ptr<WeightStore> weights) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<Qwen3Model> model,
                                Qwen3Model::create(config_, std::move(weights)));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const Qwen3Config config_;
};

class Qwen3Family final : public ModelFamily {
 public:
  absl::string_view name() const override { return kQwen3Architecture; }

  // Recognised by model_type alone, so that a Qwen3 config the port cannot
  // run is refused by recipe() with the reason, not as an unknown model.
  bool recognizes(const Checkpoint& checkpoint) const override {
    if (checkpoint.config_json().empty()) return false;
    absl::StatusOr<nlohmann::json> config = parse_json_strict(checkpoint.config_json(), checkpoint.config_path());
    return config.ok() && config->is_object() && config->value("model_type", std::string()) == "qwen3";
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    return recipe_for_config(checkpoint.config_json(), checkpoint.config_path());
  }

  std::vector<std::string> config_classes() const override { return {"Qwen3ForCausalLM", "Qwen3Model"}; }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                absl::string_view path) const override {
    DIFFUSIOND_ASSIGN_OR_RETURN(Qwen3Config config, parse_qwen3_config(json, path));
    return std::unique_ptr<LoadRecipe>(new Qwen3Recipe(config));
  }
};

}  // namespace

const ModelFamily* qwen3_family() {
  static const ModelFamily* const family = new Qwen3Family();
  return family;
}

}  // namespace diffusiond
