// describe_model: what a model is, without loading it — the one lookup that
// a pipeline's stages and a Denoise's later segments both make before any
// load.
#ifndef DIFFUSIOND_CORE_ENGINE_DESCRIBE_MODEL_H_
#define DIFFUSIOND_CORE_ENGINE_DESCRIBE_MODEL_H_

#include "absl/status/statusor.h"
#include "core/engine/engine_api.h"

namespace diffusiond {

// The description of the model `model.path` names: a loaded model's info
// by its id (FAILED_PRECONDITION if it was loaded with other options than
// `model` sets: check_load_options), else engine.inspect()'s of that path
// with those options, from headers and config alone (and its errors).
absl::StatusOr<ModelInfo> describe_model(EngineApi& engine, const ModelLoadRequest& model);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_DESCRIBE_MODEL_H_
