// EngineOptions: how an Engine (engine.h) is made: its models directory,
// budgets, device, observers and the defaults of loads that do not say.
#ifndef DIFFUSIOND_CORE_ENGINE_ENGINE_OPTIONS_H_
#define DIFFUSIOND_CORE_ENGINE_ENGINE_OPTIONS_H_

#include <functional>
#include <string>

#include "absl/time/time.h"
#include "core/cache/model_cache.h"
#include "core/checkpoint/random_access_file.h"
#include "core/loader/streaming_loader.h"
#include "core/memory/budget.h"
#include "core/precision/compute_dtype.h"
#include "core/precision/precision_policy.h"
#include "core/util/clock.h"
#include "core/vram/vram_device.h"

namespace diffusiond {

struct EngineOptions {
  std::string models_dir;         // every load is confined to it
  Budget* ram_budget = nullptr;   // required; not owned
  // With a device, denoiser forwards run there: each model is placed under
  // the VRAM budget (core/vram) before its step. Without one they run on
  // the CPU. Both or neither; not owned.
  VramDevice* device = nullptr;
  Budget* vram_budget = nullptr;
  CacheObserver* observer = nullptr;  // optional (logs, metrics); not owned
  // Events of the VRAM tier (placements evicted to RAM, refusals); not owned.
  CacheObserver* vram_observer = nullptr;
  // Each load's progress as its waiters get it (after each tensor), keyed by
  // model id, for watchers of every load (EngineEventFeed::on_load_progress).
  // Called on the loading thread; must not block. Optional.
  std::function<void(const std::string& model_id, const LoadProgress& progress)> on_load_progress;
  // Placements run FP8 linear layers as scaled FP8 matmuls where they can
  // (core/vram/device_placement.h PlacementOptions).
  bool fp8_matmul = true;
  // ... accumulating in cuBLAS's reduced precision (PlacementOptions).
  bool fp8_fast_accum = false;
  // One-line notes for the daemon's log (e.g. each layer's FP8 matmul
  // choice, once); may be empty.
  std::function<void(const std::string&)> note;
  Clock* clock = nullptr;             // default real_clock()
  // How checkpoint files (weights, shards) are opened; tests inject faults
  // here. Empty: open_random_access_file. config.json, the scheduler
  // config, shard indexes and tokenizer files are read whole
  // (core/util/file_text.h) and do not pass through it.
  FileOpener file_opener;
  // A load still running this long after its loader started is cancelled
  // for every caller with DEADLINE_EXCEEDED naming the model and the
  // timeout, and its reservation freed. Checked on the clock before and
  // after each tensor, so a read that never returns is not cut short (the
  // daemon's drain gives up on it instead). Default: none.
  absl::Duration load_timeout = absl::InfiniteDuration();
  // How long a load or a call waits in line for RAM that work in flight
  // holds (ModelCache::make_room, RoomWait) before RESOURCE_EXHAUSTED; the
  // caller's cancellation ends the wait sooner. A request that could never
  // fit is refused at once. Default 0: refuse at once.
  absl::Duration max_room_wait = absl::ZeroDuration();
  // Defaults for loads that do not say.
  ComputeDtype compute_dtype = ComputeDtype::kFloat32;
  Fp8Options fp8 = {Fp8Format::kE4M3Fn, Fp8Scaling::kNone};
  // Keep weights a checkpoint stores narrower than the compute dtype as
  // stored (PlanOptions::keep_narrow): same results, less RAM.
  bool keep_narrow_weights = false;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_ENGINE_OPTIONS_H_
