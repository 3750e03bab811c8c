// The PEFT LoraConfig that a diffusers adapter file carries in its header
// (lora_file.h kLoraAdapterMetadataKey), for one section of the file
// ("transformer", "text_encoder"): what fixes each module's rank and
// lora_alpha, hence its scale lora_alpha / r (or / √r with rsLoRA).
//
// Not here: alphas stored as tensors (lora_plan.h).
#ifndef DIFFUSIOND_CORE_LORA_LORA_METADATA_H_
#define DIFFUSIOND_CORE_LORA_LORA_METADATA_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

struct LoraSectionConfig {
  std::optional<int64_t> r;          // "<section>.r"
  std::optional<double> lora_alpha;  // "<section>.lora_alpha"
  // Per-module overrides, keyed by a module name or a dotted suffix of one
  // (PEFT matches "(.*\.)?<key>$").
  std::map<std::string, int64_t> rank_pattern;
  std::map<std::string, double> alpha_pattern;
  bool use_rslora = false;  // scale lora_alpha / √r
  bool use_dora = false;

  // The rank and the alpha PEFT builds `module` with: its pattern's, else
  // the section's; nothing when neither is given.
  std::optional<int64_t> rank_for(absl::string_view module) const;
  std::optional<double> alpha_for(absl::string_view module) const;
};

// Reads the "<section>.*" fields of `metadata` (a parsed
// lora_adapter_metadata object, or null). Nothing when it has none for
// `section`. INVALID_ARGUMENT prefixed with `what` for a field of the wrong
// type, a rank below 1, an alpha that is not finite, or a pattern key that
// is a regular expression rather than a module name.
absl::StatusOr<std::optional<LoraSectionConfig>> read_lora_section_config(const nlohmann::json& metadata,
                                                                          absl::string_view section,
                                                                          absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LORA_LORA_METADATA_H_
