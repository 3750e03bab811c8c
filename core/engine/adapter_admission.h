// The LoRA adapters of one call, admitted: each file named by a request is
// confined to the models directory, planned from its header for the call's
// model (a bad file is refused before anything is read or run), and held
// in the model cache as a value of its own, keyed by path, architecture and
// compute dtype. A cached adapter answers at once; one not cached is
// admitted by make_room like any model's bytes, loaded once however many
// calls ask, and pinned while the call runs; unpinned, the same LRU may
// evict it. Switching adapters between calls therefore touches no base
// weight and re-reads no adapter already held.
//
// Not here: attaching the adapters to the forward (core/lora/adapter_set.h;
// the engine builds the set against the admitted model).
#ifndef DIFFUSIOND_CORE_ENGINE_ADAPTER_ADMISSION_H_
#define DIFFUSIOND_CORE_ENGINE_ADAPTER_ADMISSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/cache/model_cache.h"
#include "core/engine/engine_api.h"
#include "core/engine/loaded_model.h"
#include "core/lora/adapter_set.h"

namespace diffusiond {

// Cache keys of adapters start with this, which no model id may (the
// resolver refuses it), so an adapter is never taken for a model.
inline constexpr char kAdapterKeyPrefix[] = "lora:";
inline bool is_adapter_key(absl::string_view key) { return absl::StartsWith(key, kAdapterKeyPrefix); }

// What admitting a call's adapters did, for its events.
struct AdapterReport {
  std::vector<std::string> loaded;   // the keys of adapters loaded for this call
  std::vector<std::string> evicted;  // what their admission evicted
  // What the adapters hold that the call does not apply, one line each:
  // text-encoder modules for no encoder in `encoders_applied`, so that no
  // part of a file is left out without a word.
  std::vector<std::string> notes;
};

// The adapters of one call, pinned. Member order is teardown order: the
// weighted adapters view the cached values, so they go before the pins.
struct AdmittedAdapters {
  std::vector<Pin> pins;
  // Views of the pinned values (no ownership): valid while `pins` live.
  std::vector<WeightedLoraAdapter> adapters;
};

struct AdapterAdmissionOptions {
  std::string models_dir;  // every adapter path is confined to it
  // Refuse at once (RESOURCE_EXHAUSTED naming bytes) when the adapters not
  // cached, with `model_bytes` beside them, exceed this capacity.
  int64_t capacity_bytes = 0;
  int64_t model_bytes = 0;
  RoomWait wait;
  // The pipeline's text encoders (component names) the adapters' modules
  // were applied to by the caller; the report's notes name the rest.
  std::vector<std::string> encoders_applied;
};

// Admits `requests` for the model `model` describes (its architecture and
// compute dtype). INVALID_ARGUMENT for a weight that is not finite, and the
// errors of resolve_confined_path, LoraFile::open, plan_lora and
// LoraAdapter::load (another architecture, a NaN, a truncated file), each
// naming the adapter; RESOURCE_EXHAUSTED before any load when the adapters
// could never fit, or make_room's when room cannot be had now. On error
// nothing stays pinned; adapters already loaded stay cached (evictable).
absl::StatusOr<AdmittedAdapters> admit_adapters(ModelCache& cache, const std::vector<AdapterRequest>& requests,
                                                const ModelDescription& model, const AdapterAdmissionOptions& options,
                                                AdapterReport* report);

// What the adapters add to a forward's working memory, as a share of its
// activations: a term's one temporary is x·Aᵀ, [rows, rank], beside the
// layer's input [rows, in] that the activation estimate already holds, and
// a weight's terms run one after another, each temporary freed before the
// next (AdapterSet::add_term). So the share is the largest rank / in of
// any module (the denoiser's or a text encoder's); 0 without adapters.
double adapter_working_share(const AdmittedAdapters& admitted);

// `bytes` of activations grown by the adapters' working share, rounded up.
int64_t with_adapter_working_memory(int64_t bytes, const AdmittedAdapters& admitted);

// The set of `admitted` built against `model`, the call's admitted model
// (AdapterSet::create's checks: INVALID_ARGUMENT naming the adapter, its
// module and the weight); null when there are no adapters.
absl::StatusOr<std::unique_ptr<AdapterSet>> adapter_set_for(const Model& model, const AdmittedAdapters& admitted);

// Runs `fn` with `set` attached on this thread (none when null).
template <typename F>
auto run_with_adapters(const AdapterSet* set, F&& fn) -> decltype(fn()) {
  if (set == nullptr) return fn();
  const LinearAdapterScope attached = set->attach();
  return fn();
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_ADAPTER_ADMISSION_H_
