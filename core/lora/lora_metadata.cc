#include "core/lora/lora_metadata.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// The pattern key that PEFT would match against `module`, if any: `key`
// matches the whole name or a dotted suffix of it.
template <typename T>
std::optional<T> pattern_value(const std::map<std::string, T>& patterns, absl::string_view module) {
  for (const auto& [key, value] : patterns) {
    if (module == key ||
        (absl::EndsWith(module, key) && module.size() > key.size() && module[module.size() - key.size() - 1] == '.')) {
      return value;
    }
  }
  return std::nullopt;
}

template <typename T>
absl::Status read_pattern(const nlohmann::json& metadata, const std::string& field, absl::string_view what,
                          std::map<std::string, T>* out) {
  if (!metadata.contains(field) || metadata.at(field).is_null()) return absl::OkStatus();
  const nlohmann::json& patterns = metadata.at(field);
  if (!patterns.is_object()) return json_field_error(what, field, patterns, "an object");
  for (const auto& [key, value] : patterns.items()) {
    // A regular expression would need PEFT's re.match to read; refusing it
    // beats applying a module's scale to the wrong modules.
    if (key.empty() || key.find_first_of("^$*+?()[]{}|\\") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", field, " key '", bounded(key, 64),
                                                     "' is a regular expression; only module names are supported"));
    }
    const bool ok = std::is_integral_v<T> ? value.is_number_integer() : value.is_number();
    if (!ok) return json_field_error(what, absl::StrCat(field, ".", key), value, "a number");
    (*out)[key] = value.template get<T>();
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<int64_t> LoraSectionConfig::rank_for(absl::string_view module) const {
  if (std::optional<int64_t> r_module = pattern_value(rank_pattern, module)) return r_module;
  return r;
}

std::optional<double> LoraSectionConfig::alpha_for(absl::string_view module) const {
  if (std::optional<double> a = pattern_value(alpha_pattern, module)) return a;
  return lora_alpha;
}

absl::StatusOr<std::optional<LoraSectionConfig>> read_lora_section_config(const nlohmann::json& metadata,
                                                                          absl::string_view section,
                                                                          absl::string_view what) {
  if (!metadata.is_object()) return std::nullopt;
  const std::string prefix = absl::StrCat(section, ".");
  bool any = false;
  for (const auto& [key, unused] : metadata.items()) any = any || absl::StartsWith(key, prefix);
  if (!any) return std::nullopt;

  LoraSectionConfig c;
  int64_t r = 0;
  double alpha = 0;
  const std::string r_field = prefix + "r", alpha_field = prefix + "lora_alpha";
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(metadata, r_field.c_str(), what, &r));
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(metadata, alpha_field.c_str(), what, &alpha));
  if (metadata.contains(r_field) && !metadata.at(r_field).is_null()) c.r = r;
  if (metadata.contains(alpha_field) && !metadata.at(alpha_field).is_null()) c.lora_alpha = alpha;
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(metadata, (prefix + "use_rslora").c_str(), what, &c.use_rslora));
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(metadata, (prefix + "use_dora").c_str(), what, &c.use_dora));
  DIFFUSIOND_RETURN_IF_ERROR(read_pattern(metadata, prefix + "rank_pattern", what, &c.rank_pattern));
  DIFFUSIOND_RETURN_IF_ERROR(read_pattern(metadata, prefix + "alpha_pattern", what, &c.alpha_pattern));

  std::vector<int64_t> ranks = {c.r.value_or(1)};
  for (const auto& [key, rank] : c.rank_pattern) ranks.push_back(rank);
  for (int64_t rank : ranks) {
    if (rank < 1) return absl::InvalidArgumentError(absl::StrCat(what, ": ", section, " rank ", rank, " is below 1"));
  }
  std::vector<double> alphas = {c.lora_alpha.value_or(1)};
  for (const auto& [key, a] : c.alpha_pattern) alphas.push_back(a);
  for (double a : alphas) {
    if (!std::isfinite(a)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", section, " lora_alpha ", a, " is not finite"));
    }
  }
  return c;
}

}  // namespace diffusiond
