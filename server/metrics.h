// DaemonMetrics: the daemon's Prometheus metrics (docs/operations.md lists
// every series). Two kinds:
//  - state read at scrape time, so it is never stale and a model's series
//    vanish the moment it leaves the cache: process_* from /proc, the
//    memory limit (cgroup or MemTotal), the budgets, reserved/used bytes and
//    per-model bytes (RAM and VRAM) from a CacheStats source, each
//    placement's streamed bytes, and the work queues' depth;
//  - events counted as they happen: loads by result, evictions, admission
//    rejections, unloads (through the CacheObserver seam), the VRAM tier's
//    placements, evictions to RAM and refusals (through a second observer),
//    cancellations, calls by method and status code (server/rpc_metrics.h),
//    readiness, and the load / step / denoise / Generate stage / call
//    latency histograms.
// MetricsServer serves them over HTTP on their own port.
//
// Not here: the collectors themselves (process_collector.h,
// memory_limit_collector.h, cache_stats_collector.h, placement_collector.h,
// queue_collector.h) or the gRPC interceptor (rpc_metrics.h).
#ifndef DIFFUSIOND_SERVER_METRICS_H_
#define DIFFUSIOND_SERVER_METRICS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/cache/cache_observer.h"
#include "core/cache/cache_stats.h"
#include "server/placement_collector.h"
#include "server/queue_collector.h"

namespace prometheus {
class Collectable;
class Registry;
}  // namespace prometheus

namespace diffusiond {

struct BuildInfo {
  std::string version;        // diffusiond version
  std::string torch_version;  // libtorch it was built against
  bool cuda = false;          // built with CUDA kernels
  int compute_threads = 1;    // intra-op threads every forward may use
  std::string allocator;      // the heap allocator (core/memory/allocator.h)
  // The BLAS kernels float32 matmuls run on (core/cpu/blas_kernels.h).
  std::string blas_library;    // e.g. "OpenBLAS 0.3.21"; empty: not OpenBLAS
  std::string blas_core;       // e.g. "Haswell"; "unknown" when not OpenBLAS
  std::string blas_chosen_by;  // "openblas", "diffusiond", "OPENBLAS_CORETYPE" or "none"
  bool blas_fallback = false;  // generic kernels on a CPU that runs better ones
};

// The daemon's metrics: owns the registry of event counters and histograms
// and the scrape-time collectors. Thread-safe. As a CacheObserver it must
// outlive the cache that reports to it.
class DaemonMetrics final : public CacheObserver {
 public:
  // `cache_stats` is called at each scrape, from the exposer's threads (so it
  // must be thread-safe) and from scrape_text(); it must stay callable until
  // this object and every MetricsServer over it are gone. An empty function
  // reports no cache state. `placements` and `queues` are called the same
  // way for the models placed on the device (empty: none, no device) and
  // the work queues (empty: none).
  DaemonMetrics(const BuildInfo& build, std::function<CacheStats()> cache_stats,
                std::function<std::vector<PlacementFigures>()> placements = nullptr,
                std::function<std::vector<QueueFigures>()> queues = nullptr);
  ~DaemonMetrics() override;

  // Counts loads by result (ok | error | rejected | cancelled, from the
  // status code of a kLoadFailed), observes the seconds of successful loads,
  // and counts evictions, unloads and admission rejections.
  void on_cache_event(const CacheEvent& event) override;

  // Returns the observer of the VRAM tier's events, owned by this object:
  // it counts placements built, placements evicted to RAM and VRAM requests
  // refused. Unlike a RAM eviction, a placement's eviction keeps the
  // model's series: the model is still loaded.
  CacheObserver* vram_observer();

  // Observes one model forward (a Step call or one denoise step). Series
  // by model are bounded (server/model_series.h): removed when the model is
  // evicted or unloaded, and beyond 64 models aggregated under "other"; an
  // observation for a model no longer loaded is dropped.
  void observe_step(absl::string_view model, absl::Duration took);
  // Observes a whole Denoise call, by result (ok | cancelled | error).
  void observe_denoise(absl::string_view model, absl::string_view result, absl::Duration took);
  // Counts work stopped by a client cancel, a deadline or a drain;
  // `operation` is load | denoise | step.
  void count_cancellation(absl::string_view operation);
  // Counts a request refused because a work queue was full; `queue` is
  // load | compute.
  void count_queue_rejection(absl::string_view queue);
  // Counts a finished gRPC call by service, method and status code name
  // ("OK", "NOT_FOUND"), and observes its seconds by service and method.
  // The caller bounds the label values (rpc_labels in rpc_metrics.h).
  void observe_rpc(absl::string_view service, absl::string_view method, absl::string_view code, absl::Duration took);
  // Observes one stage of a Generate call: `stage` is load (per component,
  // 0 s when already loaded), encode, denoise (per step) or decode.
  void observe_generate_stage(absl::string_view stage, absl::Duration took);
  // Counts a call refused by the authorizer; `reason` is one of
  // kAuthDenialReasons (authorizer.h).
  void count_auth_denial(absl::string_view reason);
  // Counts a re-read of the changed access file, ok or failed.
  void count_auth_reload(bool ok);
  // Counts one encode, denoise step or decode of a Generate by where it ran
  // (`device`: "cpu", "sim", "cuda:0"; one value per daemon, so bounded).
  void count_generate_stage_device(absl::string_view stage, absl::string_view device);
  // Sets diffusiond_ready: 1 while health's readiness is SERVING.
  void set_ready(bool ready);
  // diffusiond_event_watchers: WatchEvents streams open (+1 at start, -1 at end).
  void add_event_watchers(int delta);

  // Returns the registry of event counters and histograms. It does not hold
  // the scrape-time series; collectables() has everything.
  std::shared_ptr<prometheus::Registry> registry() const;

  // Returns everything a scrape serialises, in order: the registry, the
  // process_* collector, the memory limit's, the cache-state collector, the
  // placements' and the queues'.
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables() const;

  // Returns the text exposition format of collectables(), as a scrape does.
  std::string scrape_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Serves `metrics` at http://<address>/metrics (GET or HEAD) until
// destroyed, which it must be before `metrics` (metrics_http_server.cc says
// why it is not prometheus::Exposer). One thread serves up to 32
// connections at once without blocking on any: a client has 2 s to send its
// request and 2 s more to take the response, and an idle or slow client
// never delays another's scrape.
class MetricsServer {
 public:
  // Binds `address` ("host:port"; port 0 picks a free one) and starts
  // serving. Returns UNAVAILABLE naming the address when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> start(const std::string& address,
                                                              const DaemonMetrics& metrics);
  virtual ~MetricsServer() = default;
  // Returns the port actually bound (useful with port 0).
  virtual int port() const = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_METRICS_H_
