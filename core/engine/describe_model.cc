#include "core/engine/describe_model.h"

#include <utility>

#include "core/engine/load_resolver.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<ModelInfo> describe_model(EngineApi& engine, const ModelLoadRequest& model) {
  // A loaded model's id need not be a path: it is looked up first.
  for (ModelInfo& m : engine.list()) {
    if (m.model_id != model.path) continue;
    DIFFUSIOND_RETURN_IF_ERROR(check_load_options(m, model));
    return std::move(m);
  }
  return engine.inspect(model);
}

}  // namespace diffusiond
