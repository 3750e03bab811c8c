// ModelHandle: a model readied for calls (EngineApi::ready), and
// CallResult: what one call on it answers, with its CallReport.
//
// A handle is not a pin. A pipeline readies each component once, then calls
// it, and its stages share one budget: the denoiser's load must be free to
// evict the encoder readied before it, and a call that waits for room holds
// nothing (step_admission.h), so two calls can never each hold the model
// the other needs evicted. Instead a readied handle carries how its model
// was loaded: a call that finds it evicted since loads it again itself,
// under the same id and options, and says so in its report. The caller
// never retries.
#ifndef DIFFUSIOND_CORE_ENGINE_MODEL_HANDLE_H_
#define DIFFUSIOND_CORE_ENGINE_MODEL_HANDLE_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/call_device.h"
#include "core/engine/model_info.h"

namespace diffusiond {

class ModelHandle {
 public:
  ModelHandle() = default;  // names no model; a call on it is NOT_FOUND
  // A model cached under `model_id`, as the wire's calls name one: a call
  // on it answers NOT_FOUND once the model is gone.
  static ModelHandle by_id(std::string model_id) {
    ModelHandle h;
    h.info_.model_id = std::move(model_id);
    return h;
  }
  // What ready() found or loaded, and how to load it again.
  ModelHandle(ModelInfo info, ModelLoadRequest reload, bool loaded)
      : info_(std::move(info)), reload_(std::move(reload)), loaded_(loaded) {}

  const std::string& id() const { return info_.model_id; }
  // Its description and use when it was readied; a handle by_id() holds
  // only the id (its role is then checked by the call).
  const ModelInfo& info() const { return info_; }
  bool readied() const { return reload_.has_value(); }
  // How a call loads it again if it was evicted since; empty for by_id().
  const std::optional<ModelLoadRequest>& reload() const { return reload_; }
  // True when ready() loaded it (it was not cached).
  bool loaded() const { return loaded_; }

 private:
  ModelInfo info_;
  std::optional<ModelLoadRequest> reload_;
  bool loaded_ = false;
};

// What one call did besides its answer, for the caller's events.
struct CallReport {
  // Models evicted from RAM to admit the call (and to load it again).
  std::vector<std::string> evicted;
  CallDevice where;  // where it ran, and what its placement did
  // The model had been evicted since it was readied and was loaded again.
  bool reloaded = false;
  // The cache keys of the LoRA adapters loaded for the call.
  std::vector<std::string> adapters_loaded;
};

template <typename T>
struct CallResult {
  T value;
  CallReport report;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_MODEL_HANDLE_H_
