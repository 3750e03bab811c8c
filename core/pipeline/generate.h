// Generate: prompt to image through three cached models — a text encoder,
// a denoiser and a VAE — each loaded on demand and admitted by its own
// reservation under the one budget. Stages run one after another and each
// component is pinned only while it works, so when RAM cannot hold all
// three the encoder is evicted (LRU) to make room for the next; every load
// and eviction is reported as an event.
//
// Not here: the models (core/models), loading and eviction (the engine),
// PNG encoding (core/image).
#ifndef DIFFUSIOND_CORE_PIPELINE_GENERATE_H_
#define DIFFUSIOND_CORE_PIPELINE_GENERATE_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/engine/engine_api.h"
#include "core/util/cancellation.h"
#include "core/util/clock.h"

namespace diffusiond {

struct GenerateRequest {
  // A pipeline folder (model_index.json) relative to the models directory;
  // its components load as "<pipeline>/<component>". May be empty when all
  // three components are named below.
  std::string pipeline;
  // Each: a loaded model's id or a path to load; non-empty overrides the
  // pipeline's component.
  std::string text_encoder, transformer, vae;
  std::string prompt;
  std::string negative_prompt;  // used when guidance_scale > 1
  int64_t width = 1024, height = 1024;  // pixels, multiples of 16
  int steps = 8;
  double guidance_scale = 1.0;  // classifier-free; <= 1 is off
  uint64_t seed = 0;
  double shift = 0;  // 0: the transformer's own schedule
};

struct GenerateEvent {
  enum class Stage { kLoad, kEvict, kEncode, kDenoise, kDecode };
  Stage stage = Stage::kLoad;
  std::string model_id;
  int step = 0, steps = 0;  // kDenoise
  absl::Duration time;
  std::string detail;
};

struct GenerateOptions {
  std::function<void(const GenerateEvent&)> on_event;  // optional
  // Checked between stages and steps, and passed to every engine call, so
  // a forward stops between its blocks. Default: never cancelled.
  CancellationToken cancel;
  Clock* clock = nullptr;  // times the stages; default real_clock()
};

struct GeneratedImage {
  torch::Tensor pixels;  // uint8 [height, width, 3]
  uint64_t seed = 0;
  // What made it, for the PNG's text chunks ("parameters": JSON).
  std::vector<std::pair<std::string, std::string>> parameters;
};

// The VAE's spatial factor and channels for the pipelines served (Z-Image,
// FLUX.1: 16 latent channels, 8× downsampling).
inline constexpr int64_t kVaeScaleFactor = 8;
inline constexpr int64_t kLatentChannels = 16;

// Returns the id of the model `id_or_path` names: a loaded model's id, else
// the model the engine loads from that path now, reporting the load and
// the evictions it caused through `options.on_event`; a load stops when
// `options.cancel` fires. The engine's load errors otherwise.
absl::StatusOr<std::string> ready_component(EngineApi& engine, const std::string& id_or_path,
                                            const GenerateOptions& options);

// Runs the pipeline. INVALID_ARGUMENT for a bad request (size, steps,
// missing components, a pipeline folder without model_index.json),
// the token's reason (CANCELLED) once `cancel` fires, and the engine's errors (e.g.
// RESOURCE_EXHAUSTED when a component cannot be admitted).
absl::StatusOr<GeneratedImage> generate(EngineApi& engine, const std::string& models_dir,
                                        const GenerateRequest& request, const GenerateOptions& options = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_GENERATE_H_
