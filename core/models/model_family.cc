#include "core/models/model_family.h"

#include "core/denoise/scheduler_config.h"
#include "core/models/anima_conditioner/anima_conditioner_family.h"
#include "core/models/clip/clip_family.h"
#include "core/models/cosmos/cosmos_family.h"
#include "core/models/flux/flux_family.h"
#include "core/models/krea2/krea2_family.h"
#include "core/models/qwen25_vl/qwen25_vl_family.h"
#include "core/models/qwen3/qwen3_family.h"
#include "core/models/qwen3_vl/qwen3_vl_family.h"
#include "core/models/qwen_image/qwen_image_family.h"
#include "core/models/t5/t5_family.h"
#include "core/models/vae/vae_family.h"
#include "core/models/wan/wan_family.h"
#include "core/models/wan_vae/wan_vae_family.h"
#include "core/models/z_image/z_image_family.h"
#include "core/util/json.h"

namespace diffusiond {

TableRecipe::TableRecipe(std::vector<ParamSpec> table) : table_(std::move(table)) {
  for (const ParamSpec& p : table_) kinds_[p.name] = p.kind;
}

ParamKind TableRecipe::classify(absl::string_view name, const std::vector<int64_t>& shape) const {
  auto it = kinds_.find(name);
  return it != kinds_.end() ? it->second : classify_by_rule(name, shape);
}

absl::StatusOr<ScheduleOptions> checkpoint_schedule(const Checkpoint& checkpoint, const ScheduleOptions& defaults) {
  if (checkpoint.scheduler_config_json().empty()) return defaults;
  return parse_scheduler_config(checkpoint.scheduler_config_json(), "scheduler_config.json of " + checkpoint.path(),
                                defaults);
}

const std::vector<const ModelFamily*>& model_families() {
  // Leaked on purpose: statics stay trivially destructible.
  static const auto* const families = new std::vector<const ModelFamily*>{
      z_image_family(), flux_family(),  qwen_image_family(), krea2_family(), wan_family(), cosmos_family(),
      qwen_image_vae_family(), wan_vae_family(),  // before vae_family(): a Wan VAE file has its names too
      vae_family(),     qwen3_family(), clip_family(),       t5_family(), qwen25_vl_family(), qwen3_vl_family(),
      anima_conditioner_family()};
  return *families;
}

const ModelFamily* find_family_for_config(absl::string_view config_json) {
  const std::string cls = config_class_name(config_json);
  for (const ModelFamily* family : model_families()) {
    for (const std::string& c : family->config_classes()) {
      if (!cls.empty() && c == cls) return family;
    }
  }
  return nullptr;
}

const ModelFamily* find_model_family(const Checkpoint& checkpoint) {
  for (const ModelFamily* family : model_families()) {
    if (family->recognizes(checkpoint)) return family;
  }
  return nullptr;
}

}  // namespace diffusiond
