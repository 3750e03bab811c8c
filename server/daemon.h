// Daemon: the diffusiond process's parts wired together — budgets, engine,
// work queues, the gRPC services with health and reflection, metrics — and
// its lifecycle: health NOT_SERVING until ready; on drain() readiness goes
// NOT_SERVING, new work is refused after a short grace, in-flight work may
// finish until --drain_grace, the rest is cancelled, every model is
// unloaded, and every reservation is back.
#ifndef DIFFUSIOND_SERVER_DAEMON_H_
#define DIFFUSIOND_SERVER_DAEMON_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "core/cache/cache_observer_list.h"
#include "core/engine/engine.h"
#include "core/memory/budget.h"
#include "core/util/mutex.h"
#include "core/util/work_queue.h"
#include "server/cache_event_log.h"
#include "server/cache_service.h"
#include "server/daemon_options.h"
#include "server/denoise_service.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/model_service.h"

namespace diffusiond {

class Daemon {
 public:
  // Starts serving. INVALID_ARGUMENT / FAILED_PRECONDITION / UNAVAILABLE
  // for settings it cannot honour (naming the flag), such as an address that
  // cannot be bound or a missing models directory. `log` must outlive it.
  static absl::StatusOr<std::unique_ptr<Daemon>> start(const DaemonOptions& options, const Log& log);
  ~Daemon();

  // The graceful shutdown. Returns once nothing runs and nothing is held;
  // the destructor does it if nobody did.
  void drain();

  int grpc_port() const { return grpc_port_; }
  // For in-process comparisons (benchmarks) and tests.
  Engine& engine() { return *engine_; }
  int metrics_port() const;

 private:
  Daemon(const DaemonOptions& options, const Log& log);
  absl::Status start_serving();
  void set_ready(bool ready);
  void expire_leases_until_stopped();

  const DaemonOptions options_;
  const Log& log_;
  std::unique_ptr<Budget> ram_budget_;
  std::unique_ptr<DaemonMetrics> metrics_;
  std::unique_ptr<CacheEventLog> event_log_;
  std::unique_ptr<CacheObserverList> observers_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<WorkQueue> load_queue_, compute_queue_, admin_queue_;
  std::unique_ptr<ModelServiceImpl> model_service_;
  std::unique_ptr<DenoiseServiceImpl> denoise_service_;
  std::unique_ptr<CacheServiceImpl> cache_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsServer> metrics_server_;
  int grpc_port_ = 0;

  Mutex mu_;
  CondVar stop_changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool ready_ = false;  // health says SERVING
  bool drained_ = false;
  std::thread lease_timer_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_DAEMON_H_
