// Daemon: the diffusiond process's parts wired together — budgets, engine,
// work queues, the gRPC services with health and reflection, metrics — and
// its lifecycle: health NOT_SERVING until ready; on drain() readiness goes
// NOT_SERVING, new work is refused after a short grace, in-flight work may
// finish until --drain_grace, the rest is cancelled, every model is
// unloaded, and every reservation is back.
#ifndef DIFFUSIOND_SERVER_DAEMON_H_
#define DIFFUSIOND_SERVER_DAEMON_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "core/cache/cache_observer_list.h"
#include "core/catalog/model_catalog.h"
#include "core/checkpoint/random_access_file.h"
#include "core/engine/engine.h"
#include "core/engine/engine_event_feed.h"
#include "core/memory/budget.h"
#include "core/util/clock.h"
#include "core/util/mutex.h"
#include "core/util/work_queue.h"
#include "server/authorizer.h"
#include "server/cache_event_log.h"
#include "server/cache_service.h"
#include "server/daemon_device.h"
#include "server/daemon_options.h"
#include "server/denoise_service.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/model_service.h"
#include "server/pipeline_service.h"

namespace diffusiond {

// The exit status of a process whose drain gave up on work that did not stop
// when cancelled (Daemon::drain).
inline constexpr int kDrainGaveUpExitStatus = 3;

// What a Daemon takes besides its flags: the seams tests substitute, and
// waits they shorten. Not configuration, so not flags.
struct DaemonSeams {
  // Times leases, idleness and the drain; default real_clock(). Not owned.
  Clock* clock = nullptr;
  // How checkpoint files are opened; empty: the filesystem.
  FileOpener file_opener;
  // How long the drain waits for cancelled work to stop before it gives up.
  // Loads stop within a tensor and forwards within a block, so only work
  // stuck where no cancellation reaches (a read from a hung network
  // filesystem) outlasts it.
  absl::Duration cancel_wait = absl::Seconds(15);
};

class Daemon {
 public:
  // Starts serving. INVALID_ARGUMENT / FAILED_PRECONDITION / UNAVAILABLE
  // for settings it cannot honour (naming the flag), such as a --device that
  // cannot be opened, an address that cannot be bound or a missing models
  // directory. `log` (and seams.clock) must outlive it.
  static absl::StatusOr<std::unique_ptr<Daemon>> start(const DaemonOptions& options, const Log& log,
                                                       const DaemonSeams& seams = {});
  ~Daemon();

  // The graceful shutdown. Returns once nothing runs and nothing is held;
  // the destructor does it if nobody did. If work is still running
  // seams.cancel_wait after it was cancelled, joining its threads could
  // hang for good: the drain then logs what runs and ends the process with
  // _exit(kDrainGaveUpExitStatus) instead of returning.
  void drain();

  int grpc_port() const { return grpc_port_; }
  int health_port() const { return health_port_; }  // 0 without --health_listen
  // For in-process comparisons (benchmarks) and tests.
  Engine& engine() { return *engine_; }
  int metrics_port() const;

 private:
  Daemon(const DaemonOptions& options, const Log& log, const DaemonSeams& seams);
  absl::Status start_serving();
  // Logs the work still running and ends the process (see drain()).
  [[noreturn]] void exit_with_work_running(absl::Time drain_start);
  // Builds and starts the gRPC server (services, health, reflection, TLS),
  // and with --health_listen the plaintext health-only one; health
  // NOT_SERVING. UNAVAILABLE if --listen or --health_listen cannot be bound.
  absl::Status start_grpc();
  void set_ready(bool ready);
  // Sets a health service's status on the gRPC server and the health-only one.
  void set_health(const std::string& service, bool serving);
  // The work queues' figures for the metrics; none before they exist or
  // after the drain.
  std::vector<QueueFigures> queue_figures();
  // Once a second until stop: re-reads a changed access file, ends expired
  // leases, and returns the heap's free pages when no call runs.
  void housekeeping_until_stopped();
  // Re-reads --auth_token_file if it changed; logs and counts the outcome.
  void reload_access_file();

  const DaemonOptions options_;
  const Log& log_;
  const DaemonSeams seams_;
  Clock* const clock_;
  // Teardown order matters: members are destroyed bottom-up, and each one
  // below uses the ones above it, so nothing outlives what it calls.
  //   authorizer_      checks each call on gRPC's threads: outlives server_
  //   ram_budget_      every charge of the cache is against it
  //   device_          the VRAM budget and the device placements live on
  //   events_, metrics_, event_log_, observers_, vram_event_log_, vram_observers_
  //                    the engine's caches report to them until they are gone
  //                    (events_: WatchEvents calls unsubscribe until gRPC ends)
  //   engine_          the cache and its models
  //   *_queue_         their workers run engine calls
  //   *_service_       gRPC handlers over the engine, queues and metrics
  //   server_          calls the services
  //   health_server_   answers health checks only (--health_listen)
  //   metrics_server_  scrapes read metrics_, which reads the engine
  //   housekeeping_ calls the engine; joined by drain() before any of it
  // drain() (which the destructor runs if nobody did) stops them in the
  // order of use instead: readiness, new work, in-flight work, the lease
  // timer, gRPC, the queues, the models, the metrics endpoint.
  std::unique_ptr<Authorizer> authorizer_;  // with --auth_token_file only
  std::unique_ptr<Budget> ram_budget_;
  DaemonDevice device_;
  std::unique_ptr<EngineEventFeed> events_;
  std::unique_ptr<DaemonMetrics> metrics_;
  std::unique_ptr<CacheEventLog> event_log_;
  std::unique_ptr<CacheObserverList> observers_;
  std::unique_ptr<CacheEventLog> vram_event_log_;        // with a device only
  std::unique_ptr<CacheObserverList> vram_observers_;    // with a device only
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ModelCatalog> catalog_;  // ListAvailable
  // Scrapes read the queues' depth from the metrics thread while drain()
  // destroys them: queues_mu_ guards the three pointers against that.
  Mutex queues_mu_;
  std::unique_ptr<WorkQueue> load_queue_, compute_queue_, admin_queue_;
  std::unique_ptr<ModelServiceImpl> model_service_;
  std::unique_ptr<DenoiseServiceImpl> denoise_service_;
  std::unique_ptr<PipelineServiceImpl> pipeline_service_;
  std::unique_ptr<CacheServiceImpl> cache_service_;
  std::unique_ptr<grpc::Server> server_;
  // Answers UNIMPLEMENTED for every method but Health on health_server_,
  // which gRPC cannot build without a service of its own.
  std::unique_ptr<grpc::CallbackGenericService> health_unimplemented_;
  std::unique_ptr<grpc::Server> health_server_;
  std::unique_ptr<MetricsServer> metrics_server_;
  int grpc_port_ = 0;
  int health_port_ = 0;

  Mutex mu_;
  CondVar stop_changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Set by start() and drain() on the thread that owns the Daemon; atomic
  // so that a drain() from another thread (a test, a signal watcher) reads
  // them safely and runs once.
  std::atomic<bool> ready_{false};  // health says SERVING
  std::atomic<bool> drained_{false};
  std::thread housekeeping_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_DAEMON_H_
