#include "core/lora/lora_plan.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/lora/internal/messages.h"
#include "core/lora/lora_metadata.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using lora_internal::kMaxListedProblems;
using lora_internal::shape_text;

absl::Status refuse(const LoraFile& file, absl::string_view what, const std::vector<std::string>& items) {
  return absl::InvalidArgumentError(
      absl::StrCat(bounded(file.path()), ": ", what, ": ", bounded_list(items, kMaxListedProblems)));
}

// The keys of one module (one stem).
struct ModuleKeys {
  LoraKey key;
  std::vector<const TensorRecord*> down, up, alpha;
};

// Checks one module's tensors: one A, one B, at most one alpha, of shapes
// that agree. Appends what is wrong to `problems`.
void check_module(const ModuleKeys& m, std::vector<std::string>* problems) {
  const std::string& s = m.key.stem;
  if (m.down.size() != 1 || m.up.size() != 1 || m.alpha.size() > 1) {
    problems->push_back(absl::StrCat("'", s, "' has ", m.down.size(), " lora_down/lora_A, ", m.up.size(),
                                     " lora_up/lora_B and ", m.alpha.size(),
                                     " alpha tensors, expected 1, 1 and 0 or 1"));
    return;
  }
  const std::vector<int64_t>& a = m.down[0]->shape;
  const std::vector<int64_t>& b = m.up[0]->shape;
  if (a.size() != 2 || b.size() != 2 || a[0] < 1 || a[0] != b[1]) {
    problems->push_back(absl::StrCat("'", s, "' has lora_down ", shape_text(a), " and lora_up ", shape_text(b),
                                     ", expected [rank, in] and [out, rank] with one rank >= 1"));
  }
  if (!m.alpha.empty() && m.alpha[0]->numel != 1) {
    problems->push_back(
        absl::StrCat("'", s, "' has alpha of shape ", shape_text(m.alpha[0]->shape), ", expected one value"));
  }
}

// The architectures other than `own` under which every module in `modules`
// maps: what to name when a file is an adapter for another model.
std::vector<std::string> architectures_mapping_all(const std::vector<const ModuleKeys*>& modules,
                                                   const LoraArchitectureRules& own) {
  std::vector<std::string> out;
  if (modules.empty()) return out;
  for (const LoraArchitectureRules* rules : lora_architectures()) {
    if (rules == &own) continue;
    bool all = true;
    for (const ModuleKeys* m : modules) {
      absl::StatusOr<std::optional<LoraModuleTarget>> t = map_lora_module(*rules, m->key.module, m->key.flattened);
      all = all && t.ok() && t->has_value();
    }
    if (all) out.emplace_back(rules->architecture);
  }
  return out;
}

}  // namespace

int64_t LoraPlan::bytes(torch::ScalarType dtype) const {
  int64_t elements = 0;
  for (const std::vector<PlannedLoraModule>* list : {&modules, &text_encoder_modules}) {
    for (const PlannedLoraModule& m : *list) elements += m.down->numel + m.up->numel;
  }
  return elements * static_cast<int64_t>(c10::elementSize(dtype));
}

absl::StatusOr<LoraPlan> plan_lora(const LoraFile& file, absl::string_view architecture) {
  const LoraArchitectureRules* rules = find_lora_rules(architecture);
  if (rules == nullptr) {
    std::vector<std::string> supported;
    for (const LoraArchitectureRules* r : lora_architectures()) supported.emplace_back(r->architecture);
    return absl::InvalidArgumentError(absl::StrCat("LoRA adapters are not supported for architecture '",
                                                   bounded(architecture, 64),
                                                   "' (supported: ", absl::StrJoin(supported, ", "), ")"));
  }
  if (file.tensors().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(bounded(file.path()), ": holds no tensors, so no LoRA adapter"));
  }

  // Every key parsed once; the layout is one for the whole file.
  std::vector<std::string> no_layout, dora, not_lora;
  std::map<LoraFormat, std::string> formats;  // a layout -> one of its keys
  std::map<std::string, ModuleKeys> by_stem;
  for (const TensorRecord& t : file.tensors()) {
    std::optional<LoraKey> key = parse_lora_key(t.name);
    if (!key) {
      no_layout.push_back(t.name);
      continue;
    }
    formats.emplace(key->format, t.name);
    if (key->tensor == LoraTensor::kDoraScale) dora.push_back(t.name);
    if (key->tensor == LoraTensor::kOther) not_lora.push_back(t.name);
    ModuleKeys& m = by_stem[key->stem];
    if (key->tensor == LoraTensor::kDown) m.down.push_back(&t);
    if (key->tensor == LoraTensor::kUp) m.up.push_back(&t);
    if (key->tensor == LoraTensor::kAlpha) m.alpha.push_back(&t);
    m.key = *std::move(key);
  }
  if (!no_layout.empty()) {
    return refuse(file,
                  "keys in no LoRA layout (diffusers \"transformer.\", kohya \"lora_unet_\"/\"lora_te*_\", ComfyUI "
                  "\"diffusion_model.\"/\"text_encoders.\")",
                  no_layout);
  }
  if (formats.size() > 1) {
    std::vector<std::string> examples;
    for (const auto& [format, key] : formats)
      examples.push_back(absl::StrCat(lora_format_name(format), " '", key, "'"));
    return refuse(file, "mixes LoRA layouts", examples);
  }
  if (!dora.empty()) {
    return refuse(file, "DoRA is not supported (its magnitude cannot be applied as a low-rank term)", dora);
  }
  if (!not_lora.empty()) {
    return refuse(file, "keys that are no LoRA A, B or alpha (bias or norm diffs and LoRA biases are not supported)",
                  not_lora);
  }

  LoraPlan plan;
  plan.path = file.path();
  plan.architecture = std::string(architecture);
  plan.format = formats.begin()->first;

  std::vector<std::string> problems;
  std::vector<const ModuleKeys*> denoiser;
  for (const auto& [stem, m] : by_stem) {
    check_module(m, &problems);
    if (!m.key.text_encoder) denoiser.push_back(&m);
  }
  if (!problems.empty()) return refuse(file, "malformed LoRA modules", problems);

  // Denoiser modules onto the architecture's linears.
  std::vector<std::string> unmapped;
  std::map<const ModuleKeys*, LoraModuleTarget> targets;
  for (const ModuleKeys* m : denoiser) {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::optional<LoraModuleTarget> t,
                                map_lora_module(*rules, m->key.module, m->key.flattened));
    if (t) {
      targets.emplace(m, *std::move(t));
    } else {
      unmapped.push_back(m->key.stem);
    }
  }
  if (!unmapped.empty()) {
    const std::vector<std::string> others = architectures_mapping_all(denoiser, *rules);
    if (!others.empty()) {
      return refuse(file,
                    absl::StrCat("an adapter for ", absl::StrJoin(others, " or "), ", not ", architecture,
                                 ": modules that are no ", architecture, " linear"),
                    unmapped);
    }
    return refuse(file, absl::StrCat("modules that are no ", architecture, " linear"), unmapped);
  }

  // Scales: an alpha tensor, else the adapter metadata (diffusers files),
  // else alpha = rank.
  std::map<std::string, std::optional<LoraSectionConfig>> configs;  // by section
  for (const auto& [stem, m] : by_stem) {
    PlannedLoraModule p;
    p.source = stem;
    p.down = m.down[0];
    p.up = m.up[0];
    p.alpha = m.alpha.empty() ? nullptr : m.alpha[0];
    p.rank = p.down->shape[0];
    if (m.key.text_encoder) {
      p.text_encoder = m.key.section;
      p.target.modules = {m.key.module};
    } else {
      p.target = targets.at(&m);
    }
    if (plan.format == LoraFormat::kDiffusers) {
      auto it = configs.find(m.key.section);
      if (it == configs.end()) {
        DIFFUSIOND_ASSIGN_OR_RETURN(
            std::optional<LoraSectionConfig> c,
            read_lora_section_config(file.adapter_metadata(), m.key.section,
                                     absl::StrCat(bounded(file.path()), ": ", kLoraAdapterMetadataKey)));
        it = configs.emplace(m.key.section, std::move(c)).first;
      }
      if (const std::optional<LoraSectionConfig>& c = it->second) {
        if (c->use_dora) {
          return refuse(
              file,
              absl::StrCat("DoRA is not supported (", kLoraAdapterMetadataKey, " says ", m.key.section, ".use_dora)"),
              {stem});
        }
        const std::optional<int64_t> r = c->rank_for(m.key.module);
        if (r && *r != p.rank) {
          problems.push_back(absl::StrCat("'", stem, "' has rank ", p.rank, ", but the metadata says r = ", *r));
        }
        p.metadata_alpha = c->alpha_for(m.key.module);
        p.rslora = c->use_rslora;
      }
    }
    (m.key.text_encoder ? plan.text_encoder_modules : plan.modules).push_back(std::move(p));
  }
  if (!problems.empty()) return refuse(file, "LoRA modules that disagree with the adapter metadata", problems);
  return plan;
}

}  // namespace diffusiond
