// What the gRPC services share: the engine they adapt, the work queues that
// keep blocking work off gRPC's threads, and metrics.
#ifndef DIFFUSIOND_SERVER_SERVICE_DEPS_H_
#define DIFFUSIOND_SERVER_SERVICE_DEPS_H_

#include "core/catalog/model_catalog.h"
#include "core/engine/engine_api.h"
#include "core/engine/engine_event_feed.h"
#include "core/util/work_queue.h"
#include "server/metrics.h"

namespace diffusiond {

// None owned; all outlive the services.
struct ServiceDeps {
  EngineApi* engine = nullptr;  // the Engine; a fake in the services' tests
  WorkQueue* load_queue = nullptr;     // LoadModel
  WorkQueue* compute_queue = nullptr;  // Step and Denoise (--max_concurrent_denoise)
  WorkQueue* admin_queue = nullptr;    // UnloadModel, which may wait for pins
  DaemonMetrics* metrics = nullptr;
  EngineEventFeed* events = nullptr;  // WatchEvents; none: UNIMPLEMENTED
  ModelCatalog* catalog = nullptr;    // ListAvailable (on admin_queue); none: UNIMPLEMENTED
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_SERVICE_DEPS_H_
