// DaemonMetrics: the daemon's Prometheus metrics (docs/operations.md lists
// every series). Two kinds:
//  - state read at scrape time, so it is never stale and a model's series
//    vanish the moment it leaves the cache: process_* from /proc, and the
//    budgets, reserved/used bytes and per-model bytes from a CacheStats
//    source;
//  - events counted as they happen: loads by result, evictions, admission
//    rejections, unloads (through the CacheObserver seam), cancellations,
//    and the load / step / denoise latency histograms.
#ifndef DIFFUSIOND_SERVER_METRICS_H_
#define DIFFUSIOND_SERVER_METRICS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/cache/cache_observer.h"
#include "core/cache/cache_stats.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace diffusiond {

struct BuildInfo {
  std::string version;        // diffusiond version
  std::string torch_version;  // libtorch it was built against
  bool cuda = false;          // built with CUDA kernels
};

// Thread-safe.
class DaemonMetrics final : public CacheObserver {
 public:
  // `cache_stats` is called at each scrape (from the exposer's thread).
  DaemonMetrics(const BuildInfo& build, std::function<CacheStats()> cache_stats);
  ~DaemonMetrics() override;

  // Loads by result (ok | error | rejected | cancelled), their seconds,
  // evictions, unloads and admission rejections.
  void on_cache_event(const CacheEvent& event) override;

  // One model forward (a Step call or one denoise step).
  void observe_step(absl::string_view model, absl::Duration took);
  // A whole Denoise call, by result (ok | cancelled | error).
  void observe_denoise(absl::string_view model, absl::string_view result, absl::Duration took);
  // Work stopped by a client cancel, a deadline or a drain; `operation` is
  // load | denoise | step.
  void count_cancellation(absl::string_view operation);
  // Requests refused because a work queue was full; `queue` is load | compute.
  void count_queue_rejection(absl::string_view queue);

  // The registry to expose (and for tests, to serialise).
  std::shared_ptr<prometheus::Registry> registry() const;

  // The text exposition format of everything, as a scrape returns it.
  std::string scrape_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Serves `metrics` at http://<address>/metrics until destroyed.
class MetricsServer {
 public:
  // UNAVAILABLE naming the address when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> start(const std::string& address,
                                                              const DaemonMetrics& metrics);
  virtual ~MetricsServer() = default;
  // The port actually bound (useful with port 0).
  virtual int port() const = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_METRICS_H_
