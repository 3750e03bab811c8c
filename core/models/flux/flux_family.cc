#include "core/models/flux/flux_family.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "core/models/flux/flux_model.h"
#include "core/models/flux/flux_params.h"
#include "core/models/flux/flux_weight_layout.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class FluxRecipe final : public LoadRecipe {
 public:
  explicit FluxRecipe(const FluxConfig& config) : config_(config) {
    for (const ParamSpec& p : flux_parameter_table(config)) kinds_[p.name] = p.kind;
  }

  std::string describe() const override { return config_.describe(); }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return flux_canonical_name(name);
  }
  ParamKind classify(absl::string_view name, const std::vector<int64_t>& shape) const override {
    auto it = kinds_.find(std::string(name));
    // Fused and swapped original tensors are not in the table: by rule,
    // a rank-2 ".weight" is a Linear's and ".bias" a bias.
    return it != kinds_.end() ? it->second : classify_by_rule(name, shape);
  }
  PrecisionDeclaration declaration() const override { return flux_precision_declaration(); }

  absl::StatusOr<std::unique_ptr<Model>> build(std::unique_ptr<WeightStore> weights) const override {
    if (absl::Status s = to_diffusers_layout(config_, weights.get()); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("FLUX checkpoint: ", s.message()));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<FluxModel> model, FluxModel::create(config_, std::move(weights)));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const FluxConfig config_;
  std::map<std::string, ParamKind> kinds_;
};

class FluxFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kFluxArchitecture; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (!checkpoint.config_json().empty()) {
      absl::StatusOr<nlohmann::json> config = parse_json_strict(checkpoint.config_json(), "config.json");
      return config.ok() && config->is_object() &&
             config->value("_class_name", std::string()) == "FluxTransformer2DModel";
    }
    // img_in / txt_in / vector_in / final_layer.linear in original naming;
    // SD3, also with a context embedder, has no x_embedder.
    int found = 0;
    for (const TensorRecord& t : checkpoint.tensors()) {
      const std::optional<std::string> name = flux_canonical_name(t.name);
      found += name == "x_embedder.weight" || name == "context_embedder.weight" ||
               name == "time_text_embed.text_embedder.linear_1.weight" || name == "proj_out.weight";
    }
    return found == 4;
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    FluxConfig config;
    if (!checkpoint.config_json().empty()) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config,
                                  parse_flux_config(checkpoint.config_json(), checkpoint.path() + "/config.json"));
    } else {
      std::map<std::string, std::vector<int64_t>> shapes;
      std::vector<std::string> names;
      for (const TensorRecord& t : checkpoint.tensors()) {
        if (std::optional<std::string> name = flux_canonical_name(t.name)) {
          shapes[*name] = t.shape;
          names.push_back(*name);
        }
      }
      DIFFUSIOND_ASSIGN_OR_RETURN(
          config, infer_flux_config(
                      [&](absl::string_view name) -> std::optional<std::vector<int64_t>> {
                        auto it = shapes.find(std::string(name));
                        if (it != shapes.end()) return it->second;
                        return std::nullopt;
                      },
                      names, checkpoint.path()));
    }
    return flux_recipe(config);
  }
};

}  // namespace

const ModelFamily* flux_family() {
  static const ModelFamily* const family = new FluxFamily();
  return family;
}

std::unique_ptr<LoadRecipe> flux_recipe(const FluxConfig& config) {
  return std::make_unique<FluxRecipe>(config);
}

}  // namespace diffusiond
