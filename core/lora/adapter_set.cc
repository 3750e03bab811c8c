#include "core/lora/adapter_set.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/lora/internal/messages.h"
#include "core/precision/torch_dtype.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using lora_internal::kMaxListedProblems;
using TermMap = std::map<std::string, std::vector<AdapterSet::Term>, std::less<>>;
using lora_internal::shape_text;

// The shape the model stores `name` at, or nothing when it holds no such
// weight (a packed weight keeps its shape; FP8 codes have the weight's).
std::optional<std::vector<int64_t>> stored_shape(const WeightStore& store, const std::string& name) {
  if (const torch::Tensor* dense = store.dense(name)) return dense->sizes().vec();
  if (const Fp8Weight* fp8 = store.fp8(name)) return fp8->codes.sizes().vec();
  return std::nullopt;
}

// Splits `m` into one term per weight, checking the shapes; appends what
// does not fit to `problems`.
void add_module_terms(const WeightStore& store, const LoraModule& m, double scale,
                      TermMap* terms,
                      std::vector<std::string>* problems) {
  const int64_t in = m.down.size(1), rows = m.up.size(0);
  std::vector<int64_t> part_rows;
  for (const std::string& module : m.modules) {
    const std::string weight = module + ".weight";
    const std::optional<std::vector<int64_t>> shape = stored_shape(store, weight);
    if (!shape) {
      problems->push_back(absl::StrCat("'", m.source, "' updates '", weight, "', which the model does not hold"));
      return;
    }
    if (shape->size() != 2 || (*shape)[1] != in) {
      problems->push_back(absl::StrCat("'", m.source, "' has lora_down ", shape_text(m.down.sizes().vec()), ", but '",
                                       weight, "' is ", shape_text(*shape)));
      return;
    }
    part_rows.push_back((*shape)[0]);
  }
  int64_t total = 0;
  for (int64_t r : part_rows) total += r;
  if (total != rows) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < m.modules.size(); ++i) parts.push_back(absl::StrCat(m.modules[i], " ", part_rows[i]));
    problems->push_back(absl::StrCat("'", m.source, "' has lora_up ", shape_text(m.up.sizes().vec()), ", but ",
                                     m.modules.size() == 1 ? "its weight has " : "its parts have ", total, " rows (",
                                     absl::StrJoin(parts, ", "), ")"));
    return;
  }
  int64_t first = 0;
  for (size_t i = 0; i < m.modules.size(); ++i) {
    (*terms)[m.modules[i] + ".weight"].push_back({m.down, m.up.narrow(0, first, part_rows[i]), scale});
    first += part_rows[i];
  }
}

// The module names of `store`'s weights ("<module>.weight") by their kohya
// spelling (dots read as underscores), built once per set: a file's
// flattened text-encoder names are read back against them.
std::map<std::string, std::string> modules_by_flat_name(const WeightStore& store) {
  std::map<std::string, std::string> out;
  for (const std::string& name : store.names()) {
    if (!absl::EndsWith(name, ".weight")) continue;
    const std::string module = name.substr(0, name.size() - 7);
    std::string flat = module;
    std::replace(flat.begin(), flat.end(), '.', '_');
    out.emplace(std::move(flat), module);
  }
  return out;
}

// A set's adapter is there and its weight finite.
absl::Status check_weighted(const WeightedLoraAdapter& w) {
  if (w.adapter == nullptr) return absl::InvalidArgumentError("a LoRA adapter of the set is missing");
  if (!std::isfinite(w.weight)) {
    return absl::InvalidArgumentError(absl::StrCat("LoRA adapter ", bounded(w.adapter->path()), " has weight ",
                                                   w.weight, ", expected a finite number"));
  }
  return absl::OkStatus();
}

// Appends `w`'s `terms` to `into` (a weight of 0 adds none), or refuses
// the adapter naming `problems`, which `target` ("the flux model") did not
// fit: nothing of it is attached half-way.
absl::Status add_adapter_terms(const WeightedLoraAdapter& w, TermMap terms, const std::vector<std::string>& problems,
                               absl::string_view target, TermMap* into) {
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("LoRA adapter ", bounded(w.adapter->path()), " does not fit the ",
                                                   target, ": ", bounded_list(problems, kMaxListedProblems)));
  }
  if (w.weight == 0) return absl::OkStatus();
  for (auto& [weight, list] : terms) {
    std::vector<AdapterSet::Term>& to = (*into)[weight];
    to.insert(to.end(), list.begin(), list.end());
  }
  return absl::OkStatus();
}

}  // namespace

std::string lora_text_encoder_component(absl::string_view file_name) {
  if (file_name == "lora_te2" || file_name == "text_encoder_2" || absl::StrContains(file_name, "t5")) {
    return "text_encoder_2";
  }
  if (file_name == "lora_te3" || file_name == "text_encoder_3") return "text_encoder_3";
  return "text_encoder";
}

absl::StatusOr<std::unique_ptr<AdapterSet>> AdapterSet::for_text_encoder(const Model& encoder,
                                                                          std::vector<WeightedLoraAdapter> adapters,
                                                                          absl::string_view component) {
  std::unique_ptr<AdapterSet> set(new AdapterSet(encoder, std::move(adapters)));
  const torch::ScalarType dtype = compute_dtype(encoder);
  const WeightStore& store = encoder.weights();
  std::optional<std::map<std::string, std::string>> by_flat_name;  // only when a name needs it
  for (const WeightedLoraAdapter& w : set->adapters_) {
    DIFFUSIOND_RETURN_IF_ERROR(check_weighted(w));
    std::vector<std::string> problems;
    TermMap terms;
    for (const LoraModule& m : w.adapter->text_encoder_modules()) {
      if (lora_text_encoder_component(m.text_encoder) != component) continue;
      // Converted once here, not in every product (add_term).
      LoraModule resolved = m;
      resolved.down = m.down.to(dtype);
      resolved.up = m.up.to(dtype);
      for (std::string& module : resolved.modules) {
        if (store.contains(module + ".weight")) continue;
        if (!by_flat_name) by_flat_name = modules_by_flat_name(store);
        const auto found = by_flat_name->find(module);
        if (found == by_flat_name->end()) {
          problems.push_back(absl::StrCat("'", m.source, "' updates '", module, "', which the ", encoder.architecture(),
                                          " text encoder does not hold"));
          continue;
        }
        module = found->second;
      }
      if (problems.empty()) add_module_terms(store, resolved, w.weight * m.scale, &terms, &problems);
    }
    DIFFUSIOND_RETURN_IF_ERROR(add_adapter_terms(w, std::move(terms), problems,
                                                 absl::StrCat(component, " (", encoder.architecture(), ")"),
                                                 &set->terms_));
  }
  if (set->terms_.empty()) return nullptr;
  return set;
}

int64_t AdapterSet::text_encoder_conversion_bytes(const Model& encoder,
                                                  const std::vector<WeightedLoraAdapter>& adapters,
                                                  absl::string_view component) {
  const torch::ScalarType dtype = compute_dtype(encoder);
  int64_t bytes = 0;
  for (const WeightedLoraAdapter& w : adapters) {
    for (const LoraModule& m : w.adapter->text_encoder_modules()) {
      if (lora_text_encoder_component(m.text_encoder) != component) continue;
      for (const torch::Tensor* t : {&m.down, &m.up}) {
        if (t->scalar_type() != dtype) bytes += t->numel() * static_cast<int64_t>(c10::elementSize(dtype));
      }
    }
  }
  return bytes;
}

absl::StatusOr<std::unique_ptr<AdapterSet>> AdapterSet::create(const Model& model,
                                                               std::vector<WeightedLoraAdapter> adapters) {
  std::unique_ptr<AdapterSet> set(new AdapterSet(model, std::move(adapters)));
  const torch::ScalarType dtype = compute_dtype(model);
  for (const WeightedLoraAdapter& w : set->adapters_) {
    DIFFUSIOND_RETURN_IF_ERROR(check_weighted(w));
    const LoraAdapter& a = *w.adapter;
    const std::string name = bounded(a.path());
    if (a.architecture() != model.architecture()) {
      return absl::InvalidArgumentError(absl::StrCat("LoRA adapter ", name, " is for ", a.architecture(),
                                                     ", but the model is ", model.architecture()));
    }
    if (a.dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat("LoRA adapter ", name, " was loaded at ",
                                                     scalar_type_name(a.dtype()), ", but the model computes at ",
                                                     scalar_type_name(dtype)));
    }
    std::vector<std::string> problems;
    TermMap terms;
    for (const LoraModule& m : a.modules()) add_module_terms(model.weights(), m, w.weight * m.scale, &terms, &problems);
    DIFFUSIOND_RETURN_IF_ERROR(
        add_adapter_terms(w, std::move(terms), problems, absl::StrCat(model.architecture(), " model"), &set->terms_));
  }
  return set;
}

torch::Tensor AdapterSet::add_term(torch::Tensor y, const torch::Tensor& x, absl::string_view weight) const {
  const auto it = terms_.find(weight);
  if (it == terms_.end()) return y;
  for (const Term& t : it->second) {
    const torch::TensorOptions at = x.options();
    // A device forward reads A and B from the CPU copy each product: they
    // are rank-sized, small beside the weight the product streams.
    const torch::Tensor a = t.down.to(at), b = t.up.to(at);
    const torch::Tensor xa = torch::linear(x, a);  // [..., rank]
    if (y.is_contiguous() && y.scalar_type() == xa.scalar_type()) {
      // Accumulated into y: the term's only temporary is x·Aᵀ, rank-sized,
      // not a second output that no activation estimate counts.
      y.view({-1, y.size(-1)}).addmm_(xa.reshape({-1, xa.size(-1)}), b.t(), /*beta=*/1, /*alpha=*/t.scale);
    } else {
      y.add_(torch::linear(xa, b).to(y.scalar_type()), t.scale);
    }
  }
  return y;
}

const std::vector<AdapterSet::Term>* AdapterSet::terms(absl::string_view weight) const {
  const auto it = terms_.find(weight);
  return it == terms_.end() ? nullptr : &it->second;
}

std::vector<std::string> AdapterSet::weights() const {
  std::vector<std::string> out;
  for (const auto& [weight, unused] : terms_) out.push_back(weight);
  return out;
}

}  // namespace diffusiond
