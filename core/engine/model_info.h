// ModelLoadRequest and ModelInfo: how a caller names a model to load, and
// a model as the API describes it. Their own header so that ModelHandle
// (model_handle.h) can hold them without the whole EngineApi.
#ifndef DIFFUSIOND_CORE_ENGINE_MODEL_INFO_H_
#define DIFFUSIOND_CORE_ENGINE_MODEL_INFO_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "core/engine/loaded_model.h"
#include "core/memory/device.h"
#include "core/precision/compute_dtype.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

struct ModelLoadRequest {
  std::string path;      // relative to models_dir, or absolute inside it
  std::string model_id;  // empty: the canonical path relative to models_dir
  std::string config_path;  // a config.json, confined like path; empty: none
  std::optional<Fp8Options> fp8;              // empty: the engine's default
  std::optional<ComputeDtype> compute_dtype;  // empty: the engine's default
};

// A loaded model as the API describes it: how it was loaded, and its use now.
struct ModelInfo : ModelDescription {
  std::string model_id;
  // RAM held by the model; VRAM held by its placement (resident weights
  // and streaming slots), 0 when it has none.
  std::array<int64_t, kNumDevices> bytes{};
  // Its residency plan on the device ("all 12 blocks resident", or what
  // streams), empty when it is not placed.
  std::string vram_plan;
  int64_t vram_streamed_bytes_per_step = 0;
  int pins = 0;
  int leases = 0;
  absl::Duration idle;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_MODEL_INFO_H_
