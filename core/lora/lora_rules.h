// Which linear layers a LoRA adapter may update in each architecture, and
// how the names adapter files use map onto the names this project's models
// give those weights: the diffusers module names (what a model passes to
// Model::linear_layer, minus ".weight"), and the architecture's original
// names (Black Forest Labs' FLUX, Wan's and Z-Image's own checkpoints),
// which ComfyUI and kohya files use. A fused original (FLUX's qkv and
// linear1, Z-Image's qkv) maps onto its parts in row order: the models
// split those weights into row views at load, so every weight a linear
// multiplies has a part's name.
//
// Not here: key prefixes and suffixes (lora_key.h) or scales (lora_plan.h).
#ifndef DIFFUSIOND_CORE_LORA_LORA_RULES_H_
#define DIFFUSIOND_CORE_LORA_LORA_RULES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// One original module name and what it is in the project's naming.
// Templates use `{i}` (block index) and `{p}` (patch key) placeholders.
struct LoraModuleRule {
  absl::string_view from;
  // The project's module names; several for a fused original, whose
  // lora_up rows split between them in this order, by their weights' rows.
  std::vector<absl::string_view> to;
  // lora_up's two row halves swap first: FLUX's original final modulation
  // is [shift; scale], the diffusers one [scale; shift].
  bool swap_halves = false;
};

// One architecture's rules. Immutable, lives for the process.
struct LoraArchitectureRules {
  // The architecture's name (ModelFamily::name(), Model::architecture()).
  absl::string_view architecture;
  // Every module an adapter may target, in the project's naming: each is
  // multiplied through Model::linear_layer as "<module>.weight".
  std::vector<absl::string_view> modules;
  // The architecture's original names that differ from the project's.
  std::vector<LoraModuleRule> originals;
};

// What one module of an adapter file stands for.
struct LoraModuleTarget {
  std::vector<std::string> modules;  // the project's names, in row order
  bool swap_halves = false;
};

// Every architecture adapters are read for, and the one named
// `architecture` (null when adapters are not supported for it).
const std::vector<const LoraArchitectureRules*>& lora_architectures();
const LoraArchitectureRules* find_lora_rules(absl::string_view architecture);

// Maps the file's module name `module` (dotted, or kohya-flattened with
// every '.' written as '_' when `flattened`) under `rules`. Nothing when no
// rule matches; INVALID_ARGUMENT naming the rules when a flattened name
// matches two that disagree (an ambiguity no file could resolve).
absl::StatusOr<std::optional<LoraModuleTarget>> map_lora_module(const LoraArchitectureRules& rules,
                                                                absl::string_view module, bool flattened);

// The rules of each architecture (one file each).
const LoraArchitectureRules& flux_lora_rules();
const LoraArchitectureRules& z_image_lora_rules();
const LoraArchitectureRules& qwen_image_lora_rules();
const LoraArchitectureRules& wan_lora_rules();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LORA_LORA_RULES_H_
