#include "core/engine/adapter_admission.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/lora/lora_file.h"
#include "core/lora/lora_plan.h"
#include "core/memory/activation_arena_scope.h"
#include "core/precision/torch_dtype.h"
#include "core/util/bounded_text.h"
#include "core/util/confined_path.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// One request's adapter: where it is, its key, and (when not cached) its
// file opened and planned.
struct PlannedAdapter {
  std::string key;
  std::string path;  // canonical
  std::string name;  // the path inside the models directory, for messages and keys
  double weight = 1;
  std::unique_ptr<LoraFile> file;  // null when cached
  std::unique_ptr<LoraPlan> plan;
};

std::string relative_to(const std::string& root, const std::string& path) {
  std::error_code ec;
  const std::filesystem::path canonical_root = std::filesystem::canonical(root, ec);
  const std::filesystem::path relative = std::filesystem::path(path).lexically_relative(canonical_root);
  return ec || relative.empty() ? path : relative.string();
}

// Prefixes an error with the adapter it is about, keeping its code.
absl::Status about(const std::string& name, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("adapter \"", bounded(name), "\": ", status.message()));
}

// Opens `p`'s file and plans it for `architecture`; errors name the adapter.
absl::Status open_and_plan(PlannedAdapter& p, const std::string& architecture) {
  absl::StatusOr<std::unique_ptr<LoraFile>> file = LoraFile::open(p.path);
  if (!file.ok()) return about(p.name, file.status());
  absl::StatusOr<LoraPlan> plan = plan_lora(**file, architecture);
  if (!plan.ok()) return about(p.name, plan.status());
  p.file = *std::move(file);
  p.plan = std::make_unique<LoraPlan>(*std::move(plan));
  return absl::OkStatus();
}

// The cached adapter under `pin`, viewed without ownership: the pin keeps it.
std::shared_ptr<const LoraAdapter> view(const Pin& pin) {
  return std::shared_ptr<const LoraAdapter>(std::shared_ptr<const LoraAdapter>(), pin.as<LoraAdapter>());
}

// The file an adapter request names: its path, or the path inside a cache
// key ("lora:<architecture>:<dtype>:<path>", as events and stats name a
// loaded adapter), which must be for `model`'s architecture.
absl::StatusOr<std::string> path_of_adapter_id(const std::string& id, const ModelDescription& model) {
  if (!is_adapter_key(id)) return id;
  const std::vector<std::string> parts = absl::StrSplit(id, absl::MaxSplits(':', 3));
  if (parts.size() != 4 || parts[3].empty()) {
    return absl::InvalidArgumentError(absl::StrCat("adapter id \"", bounded(id),
                                                   "\" is not lora:<architecture>:<dtype>:<path>"));
  }
  if (parts[1] != model.architecture) {
    return absl::InvalidArgumentError(absl::StrCat("adapter id \"", bounded(id), "\" is for ", bounded(parts[1]),
                                                   ", but the model is ", model.architecture));
  }
  return parts[3];
}

}  // namespace

absl::StatusOr<AdmittedAdapters> admit_adapters(ModelCache& cache, const std::vector<AdapterRequest>& requests,
                                                const ModelDescription& model, const AdapterAdmissionOptions& options,
                                                AdapterReport* report) {
  AdmittedAdapters admitted;
  if (requests.empty()) return admitted;
  if (requests.size() > kMaxCallAdapters) {
    return absl::InvalidArgumentError(
        absl::StrCat("a call names ", requests.size(), " adapters; at most ", kMaxCallAdapters, " are taken"));
  }
  const torch::ScalarType dtype = to_scalar_type(model.compute_dtype);
  // Every adapter checked, and the new ones planned from their headers,
  // before any is loaded: a bad one or a set that could never fit costs
  // nothing.
  std::vector<PlannedAdapter> planned;
  int64_t new_bytes = 0;
  for (const AdapterRequest& r : requests) {
    PlannedAdapter p;
    p.weight = r.weight;
    if (r.path.empty()) return absl::InvalidArgumentError("an adapter needs a path");
    DIFFUSIOND_ASSIGN_OR_RETURN(const std::string file, path_of_adapter_id(r.path, model));
    absl::StatusOr<std::string> path = resolve_confined_path(options.models_dir, file);
    if (!path.ok()) return about(r.path, path.status());
    p.path = *path;
    p.name = relative_to(options.models_dir, *path);
    if (!std::isfinite(r.weight)) {
      return absl::InvalidArgumentError(
          absl::StrCat("adapter \"", bounded(p.name), "\": its weight ", r.weight, " is not finite"));
    }
    p.key = absl::StrCat(kAdapterKeyPrefix, model.architecture, ":", compute_dtype_name(model.compute_dtype), ":",
                         p.name);
    if (!cache.peek(p.key, [](const CacheValue&) {})) {
      DIFFUSIOND_RETURN_IF_ERROR(open_and_plan(p, model.architecture));
      new_bytes += p.plan->bytes(dtype);
    }
    planned.push_back(std::move(p));
  }
  if (new_bytes + options.model_bytes > options.capacity_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the call's adapters need ", new_bytes, " bytes beside the model's ",
                                                     options.model_bytes, ", more than the RAM budget's ",
                                                     options.capacity_bytes, " bytes"));
  }
  for (PlannedAdapter& p : planned) {
    DIFFUSIOND_ASSIGN_OR_RETURN(Claim claimed, cache.claim(p.key));
    if (Pin* hit = std::get_if<Pin>(&claimed)) {
      admitted.pins.push_back(std::move(*hit));
    } else {
      if (p.file == nullptr) {  // evicted since it was checked: planned now
        DIFFUSIOND_RETURN_IF_ERROR(open_and_plan(p, model.architecture));
      }
      std::vector<std::string> evicted;
      const auto load = [&]() -> absl::StatusOr<LoadedValue> {
        // Adapters outlive the call that loads them: none of their tensors
        // come from its activation arena.
        ActivationArenaPause adapters_outlive_the_call;
        DIFFUSIOND_ASSIGN_OR_RETURN(Reservation room,
                                    cache.make_room(p.plan->bytes(dtype), Device::kCpu, &evicted, options.wait));
        absl::StatusOr<std::unique_ptr<LoraAdapter>> adapter = LoraAdapter::load(*p.file, *p.plan, dtype);
        if (!adapter.ok()) return about(p.name, adapter.status());
        LoadedValue value;
        value.value = *std::move(adapter);
        value.reservations.push_back(std::move(room));
        return value;
      };
      absl::StatusOr<Pin> pin = std::get<LoadSlot>(claimed).finish(
          status_of(absl::StrCat("the load of adapter \"", bounded(p.name), "\""), load));
      if (report != nullptr) report->evicted.insert(report->evicted.end(), evicted.begin(), evicted.end());
      if (!pin.ok()) return pin.status();
      if (report != nullptr) report->loaded.push_back(p.key);
      admitted.pins.push_back(*std::move(pin));
    }
    admitted.adapters.push_back({view(admitted.pins.back()), p.weight});
    const LoraAdapter& held = *admitted.adapters.back().adapter;
    std::set<std::string> encoders;
    size_t not_applied = 0;
    for (const LoraModule& m : held.text_encoder_modules()) {
      const std::string component = lora_text_encoder_component(m.text_encoder);
      if (std::find(options.encoders_applied.begin(), options.encoders_applied.end(), component) !=
          options.encoders_applied.end()) {
        continue;
      }
      encoders.insert(m.text_encoder);
      ++not_applied;
    }
    if (report != nullptr && not_applied > 0) {
      report->notes.push_back(absl::StrCat("adapter \"", bounded(p.name), "\": its ", not_applied,
                                           " text-encoder modules (", absl::StrJoin(encoders, ", "),
                                           ") are not applied: no text encoder of this call takes them"));
    }
  }
  return admitted;
}

double adapter_working_share(const AdmittedAdapters& admitted) {
  double share = 0;
  for (const WeightedLoraAdapter& a : admitted.adapters) {
    for (const std::vector<LoraModule>* modules : {&a.adapter->modules(), &a.adapter->text_encoder_modules()}) {
      for (const LoraModule& m : *modules) {
        share = std::max(share, static_cast<double>(m.down.size(0)) / static_cast<double>(m.down.size(1)));
      }
    }
  }
  return share;
}

int64_t with_adapter_working_memory(int64_t bytes, const AdmittedAdapters& admitted) {
  return bytes + static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * adapter_working_share(admitted)));
}

absl::StatusOr<std::unique_ptr<AdapterSet>> adapter_set_for(const Model& model, const AdmittedAdapters& admitted) {
  if (admitted.adapters.empty()) return nullptr;
  return AdapterSet::create(model, admitted.adapters);
}

}  // namespace diffusiond
