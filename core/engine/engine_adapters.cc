// Engine::admit_adapters_for and admit_adapters_described: a call's LoRA
// adapters admitted for the model
// it runs on, under the same budget and LRU as the models
// (adapter_admission.h).
#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/util/bounded_text.h"

namespace diffusiond {

absl::StatusOr<AdmittedAdapters> Engine::admit_adapters_for(const ModelHandle& model,
                                                            const std::vector<AdapterRequest>& adapters,
                                                            const Job& job, AdapterReport* report,
                                                            const std::vector<std::string>& encoders_applied) {
  if (adapters.empty()) return AdmittedAdapters();
  // The model as loaded: a cached one's own description, else the one a
  // readied handle was given (its load comes with the call's admission).
  std::optional<ModelDescription> described;
  cache_->peek(model.id(), [&](const CacheValue& value) {
    if (const auto* loaded = dynamic_cast<const LoadedModel*>(&value)) described = loaded->description();
  });
  if (!described.has_value() && model.readied()) described = model.info();
  if (!described.has_value()) {
    return absl::NotFoundError(absl::StrCat("model \"", bounded(model.id()), "\" is not loaded; load it first"));
  }
  int64_t model_bytes = model.info().bytes[kCpuIndex];
  for (const CacheEntryStats& e : cache_->stats().entries) {
    if (e.key == model.id()) model_bytes = e.bytes[kCpuIndex];
  }
  return admit_adapters_described(*described, model_bytes, adapters, job, report, encoders_applied);
}

absl::StatusOr<AdmittedAdapters> Engine::admit_adapters_described(const ModelDescription& described,
                                                                  int64_t model_bytes,
                                                                  const std::vector<AdapterRequest>& adapters,
                                                                  const Job& job, AdapterReport* report,
                                                                  const std::vector<std::string>& encoders_applied) {
  AdapterAdmissionOptions options;
  options.models_dir = options_.models_dir;
  options.capacity_bytes = options_.ram_budget->capacity_bytes();
  options.model_bytes = model_bytes;
  options.wait = RoomWait{true, job.token()};
  options.encoders_applied = encoders_applied;
  return admit_adapters(*cache_, adapters, described, options, report);
}

}  // namespace diffusiond
