#include "core/models/z_image/z_image_family.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "core/models/z_image/z_image_config.h"
#include "core/models/z_image/z_image_model.h"
#include "core/models/z_image/z_image_params.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class ZImageRecipe final : public LoadRecipe {
 public:
  explicit ZImageRecipe(const ZImageConfig& config) : config_(config) {
    for (const ParamSpec& p : z_image_parameter_table(config)) kinds_[p.name] = p.kind;
  }

  std::string describe() const override {
    const ZImageConfig& c = config_;
    return absl::StrCat("Z-Image: dim ", c.dim, ", ", c.n_layers, " layers, ", c.n_refiner_layers,
                        " refiner layers, ", c.n_heads, " heads, cap_feat_dim ", c.cap_feat_dim,
                        ", in_channels ", c.in_channels);
  }
  std::optional<std::string> canonical_name(absl::string_view name) const override {
    return z_image_canonical_name(name);
  }
  ParamKind classify(absl::string_view name, const std::vector<int64_t>& shape) const override {
    auto it = kinds_.find(std::string(name));
    // Fused qkv tensors are not in the table (they split on load): Linear.
    return it != kinds_.end() ? it->second : classify_by_rule(name, shape);
  }
  PrecisionDeclaration declaration() const override { return z_image_precision_declaration(); }

  absl::StatusOr<std::unique_ptr<Model>> build(
      std::unique_ptr<WeightStore> weights) const override {
    for (const FusedSplit& split : z_image_fused_splits(config_, weights->names())) {
      DIFFUSIOND_RETURN_IF_ERROR(weights->split_rows(split.fused, split.parts));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<ZImageModel> model,
                                ZImageModel::create(config_, std::move(weights)));
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  const ZImageConfig config_;
  std::map<std::string, ParamKind> kinds_;
};

class ZImageFamily final : public ModelFamily {
 public:
  absl::string_view name() const override { return kZImageArchitecture; }

  bool recognizes(const Checkpoint& checkpoint) const override {
    if (!checkpoint.config_json().empty()) {
      absl::StatusOr<nlohmann::json> config = parse_json_strict(checkpoint.config_json(), "config.json");
      return config.ok() && config->is_object() &&
             config->value("_class_name", std::string()) == "ZImageTransformer2DModel";
    }
    bool cap_pad = false, cap_embedder = false, x_pad = false;
    for (const TensorRecord& t : checkpoint.tensors()) {
      const std::optional<std::string> name = z_image_canonical_name(t.name);
      if (!name.has_value()) continue;
      cap_pad |= *name == "cap_pad_token";
      x_pad |= *name == "x_pad_token";
      cap_embedder |= *name == "cap_embedder.1.weight";
    }
    return cap_pad && x_pad && cap_embedder;
  }

  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const override {
    ZImageConfig config;
    if (!checkpoint.config_json().empty()) {
      DIFFUSIOND_ASSIGN_OR_RETURN(config, parse_z_image_config(checkpoint.config_json(),
                                                               checkpoint.path() + "/config.json"));
    } else {
      std::map<std::string, std::vector<int64_t>> shapes;
      std::vector<std::string> names;
      for (const TensorRecord& t : checkpoint.tensors()) {
        if (std::optional<std::string> name = z_image_canonical_name(t.name)) {
          shapes[*name] = t.shape;
          names.push_back(*name);
        }
      }
      DIFFUSIOND_ASSIGN_OR_RETURN(
          config, infer_z_image_config(
                      [&](absl::string_view name) -> std::optional<std::vector<int64_t>> {
                        auto it = shapes.find(std::string(name));
                        if (it != shapes.end()) return it->second;
                        return std::nullopt;
                      },
                      names, checkpoint.path()));
    }
    return std::unique_ptr<LoadRecipe>(new ZImageRecipe(config));
  }
};

}  // namespace

const ModelFamily* z_image_family() {
  static const ModelFamily* const family = new ZImageFamily();
  return family;
}

}  // namespace diffusiond
