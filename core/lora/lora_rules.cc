#include "core/lora/lora_rules.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/lora/internal/name_pattern.h"
#include "core/util/bounded_text.h"

namespace diffusiond {

using lora_internal::fill_name;
using lora_internal::match_name;

const std::vector<const LoraArchitectureRules*>& lora_architectures() {
  static const auto* const all = new std::vector<const LoraArchitectureRules*>{
      &flux_lora_rules(), &z_image_lora_rules(), &qwen_image_lora_rules(), &wan_lora_rules()};
  return *all;
}

const LoraArchitectureRules* find_lora_rules(absl::string_view architecture) {
  for (const LoraArchitectureRules* rules : lora_architectures()) {
    if (rules->architecture == architecture) return rules;
  }
  return nullptr;
}

absl::StatusOr<std::optional<LoraModuleTarget>> map_lora_module(const LoraArchitectureRules& rules,
                                                                absl::string_view module, bool flattened) {
  // Every rule is tried: a flattened name could in principle match two
  // (underscores inside names), and the first match must not hide that.
  std::vector<std::pair<std::string, LoraModuleTarget>> found;  // (rule, target)
  for (absl::string_view own : rules.modules) {
    if (std::optional<std::vector<std::string>> v = match_name(own, module, flattened)) {
      found.push_back({std::string(own), LoraModuleTarget{{fill_name(own, *v)}, false}});
    }
  }
  for (const LoraModuleRule& rule : rules.originals) {
    if (std::optional<std::vector<std::string>> v = match_name(rule.from, module, flattened)) {
      LoraModuleTarget target;
      for (absl::string_view to : rule.to) target.modules.push_back(fill_name(to, *v));
      target.swap_halves = rule.swap_halves;
      found.push_back({std::string(rule.from), std::move(target)});
    }
  }
  if (found.empty()) return std::optional<LoraModuleTarget>();
  for (size_t i = 1; i < found.size(); ++i) {
    if (found[i].second.modules != found[0].second.modules ||
        found[i].second.swap_halves != found[0].second.swap_halves) {
      return absl::InvalidArgumentError(absl::StrCat("module '", bounded(module), "' matches both ", rules.architecture,
                                                     " names '", found[0].first, "' and '", found[i].first, "'"));
    }
  }
  return std::optional<LoraModuleTarget>(std::move(found[0].second));
}

}  // namespace diffusiond
