#include "server/metrics.h"

#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/authorizer.h"
#include "server/cache_stats_collector.h"
#include "server/memory_limit_collector.h"
#include "server/model_series.h"
#include "server/process_collector.h"

namespace diffusiond {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Histogram;

// Roughly 1-2.5-5 steps, wide enough that the slowest case a person would
// wait for still lands in a finite bucket.
const Histogram::BucketBoundaries& load_buckets() {
  static const auto* const kBuckets =
      new Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 600};
  return *kBuckets;
}
// Label values pre-created so dashboards see 0 rather than no series.
constexpr const char* kCancellableOperations[] = {"load", "denoise", "step", "generate"};
constexpr const char* kQueues[] = {"load", "compute"};
// Generate's stages that take time (an eviction is an event, counted by
// diffusiond_model_evictions_total).
constexpr const char* kGenerateStages[] = {"load", "encode", "denoise", "decode"};

// From a health check's milliseconds to a whole Denoise or Generate.
const Histogram::BucketBoundaries& rpc_buckets() {
  static const auto* const kBuckets =
      new Histogram::BucketBoundaries{0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 100, 300, 1800};
  return *kBuckets;
}
// A stage spans a step's milliseconds to a component's load.
const Histogram::BucketBoundaries& stage_buckets() {
  static const auto* const kBuckets =
      new Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 150, 600};
  return *kBuckets;
}

// Counts the VRAM tier's events; its counters live in the registry.
class VramEventCounter final : public CacheObserver {
 public:
  void on_cache_event(const CacheEvent& event) override {
    switch (event.kind) {
      case CacheEvent::Kind::kLoaded:
        placements->Increment();
        return;
      case CacheEvent::Kind::kEvicted:
        evictions->Increment();
        return;
      case CacheEvent::Kind::kRejected:
        rejections->Increment();
        return;
      // A failed placement follows its refusal (counted above) or is an
      // error of the step it was for; a dropped one follows its model out
      // of RAM, which the RAM cache's events count.
      case CacheEvent::Kind::kLoadFailed:
      case CacheEvent::Kind::kUnloaded:
      case CacheEvent::Kind::kWaitedForRoom:
        return;
    }
  }

  Counter* placements = nullptr;
  Counter* evictions = nullptr;
  Counter* rejections = nullptr;
};

}  // namespace

struct DaemonMetrics::Impl {
  Impl(std::function<CacheStats()> cache_stats, std::function<std::vector<PlacementFigures>()> placements,
       std::function<std::vector<QueueFigures>()> queues)
      : registry(std::make_shared<prometheus::Registry>()),
        process(std::make_shared<ProcessCollector>()),
        memory_limit(std::make_shared<MemoryLimitCollector>()),
        cache(std::make_shared<CacheStatsCollector>(std::move(cache_stats))),
        placed(std::make_shared<PlacementCollector>(std::move(placements))),
        queued(std::make_shared<QueueCollector>(std::move(queues))) {}

  const std::shared_ptr<prometheus::Registry> registry;
  const std::shared_ptr<ProcessCollector> process;
  const std::shared_ptr<MemoryLimitCollector> memory_limit;
  const std::shared_ptr<CacheStatsCollector> cache;
  const std::shared_ptr<PlacementCollector> placed;
  const std::shared_ptr<QueueCollector> queued;
  VramEventCounter vram_events;

  // Owned by `registry`; families and their children never move once added.
  Counter* loads_ok = nullptr;
  Counter* loads_error = nullptr;
  Counter* loads_rejected = nullptr;
  Counter* loads_cancelled = nullptr;
  Counter* evictions = nullptr;
  Counter* unloads = nullptr;
  Counter* admission_rejections = nullptr;
  Histogram* load_seconds = nullptr;
  Counter* load_bytes = nullptr;
  Histogram* room_wait_admitted = nullptr;
  Histogram* room_wait_refused = nullptr;
  Family<Counter>* cancellations = nullptr;
  Family<Counter>* queue_rejections = nullptr;
  Family<Counter>* rpc_calls = nullptr;
  Family<Histogram>* rpc_seconds = nullptr;
  Family<Histogram>* generate_stage_seconds = nullptr;
  Family<Counter>* generate_stage_device = nullptr;
  prometheus::Gauge* ready = nullptr;
  Family<Counter>* auth_denials = nullptr;
  Counter* auth_reloads_ok = nullptr;
  Counter* auth_reloads_error = nullptr;
  prometheus::Gauge* event_watchers = nullptr;
  std::unique_ptr<ModelSeries> model_series;  // over the step and denoise families

  // The load/eviction/unload/admission series, the VRAM tier's, and the
  // cancellation, queue and per-model timing series.
  void register_cache_events(prometheus::Registry& r);
  void register_vram_events(prometheus::Registry& r);
  void register_work(prometheus::Registry& r);
  void register_calls(prometheus::Registry& r);
  void register_auth(prometheus::Registry& r);
};

void DaemonMetrics::Impl::register_cache_events(prometheus::Registry& r) {
  Family<Counter>& loads =
      prometheus::BuildCounter()
          .Name("diffusiond_model_loads_total")
          .Help(
              "Model loads that finished, by result: ok, error, rejected (no room in the "
              "memory budget) or cancelled.")
          .Register(r);
  loads_ok = &loads.Add({{"result", "ok"}});
  loads_error = &loads.Add({{"result", "error"}});
  loads_rejected = &loads.Add({{"result", "rejected"}});
  loads_cancelled = &loads.Add({{"result", "cancelled"}});

  load_seconds = &prometheus::BuildHistogram()
                             .Name("diffusiond_model_load_seconds")
                             .Help("Seconds the loader ran, for model loads that succeeded.")
                             .Register(r)
                             .Add({}, load_buckets());
  load_bytes = &prometheus::BuildCounter()
                    .Name("diffusiond_model_load_bytes_total")
                    .Help(
                        "Bytes the successful loads made resident, all devices: over "
                        "diffusiond_model_load_seconds_sum, the loads' bytes per second.")
                    .Register(r)
                    .Add({});
  evictions = &prometheus::BuildCounter()
                          .Name("diffusiond_model_evictions_total")
                          .Help("Unpinned models removed from the cache to make room in a budget.")
                          .Register(r)
                          .Add({});
  unloads = &prometheus::BuildCounter()
                        .Name("diffusiond_model_unloads_total")
                        .Help("Models removed from the cache by an explicit unload request.")
                        .Register(r)
                        .Add({});
  admission_rejections =
      &prometheus::BuildCounter()
           .Name("diffusiond_admission_rejections_total")
           .Help(
               "Requests for memory refused because even evicting every unpinned model "
               "would not free enough of the budget.")
           .Register(r)
           .Add({});
  Family<Histogram>& room_wait = prometheus::BuildHistogram()
                                     .Name("diffusiond_memory_wait_seconds")
                                     .Help(
                                         "Seconds requests waited in line for room that work in flight held, "
                                         "by result: admitted, or refused (the wait ran out or was cancelled).")
                                     .Register(r);
  room_wait_admitted = &room_wait.Add({{"result", "admitted"}}, load_buckets());
  room_wait_refused = &room_wait.Add({{"result", "refused"}}, load_buckets());
}

// Registered on every daemon, so a dashboard reads 0 rather than nothing
// on one without a device.
void DaemonMetrics::Impl::register_vram_events(prometheus::Registry& r) {
  vram_events.placements =
      &prometheus::BuildCounter()
           .Name("diffusiond_vram_placements_total")
           .Help("Models placed on the device (weights copied from RAM) before a forward.")
           .Register(r)
           .Add({});
  vram_events.evictions =
      &prometheus::BuildCounter()
           .Name("diffusiond_vram_evictions_total")
           .Help(
               "Placements evicted from the device to make room in the VRAM budget; their models "
               "stay loaded in RAM and are placed again from there.")
           .Register(r)
           .Add({});
  vram_events.rejections =
      &prometheus::BuildCounter()
           .Name("diffusiond_vram_rejections_total")
           .Help(
               "Requests for device memory refused because even evicting every unpinned placement "
               "would not free enough of the VRAM budget.")
           .Register(r)
           .Add({});
}

void DaemonMetrics::Impl::register_work(prometheus::Registry& r) {
  cancellations = &prometheus::BuildCounter()
                              .Name("diffusiond_cancellations_total")
                              .Help(
                                  "Operations stopped early by a client cancel, a deadline "
                                  "or a drain, by operation.")
                              .Register(r);
  for (const char* operation : kCancellableOperations) {
    cancellations->Add({{"operation", operation}});
  }
  queue_rejections = &prometheus::BuildCounter()
                                 .Name("diffusiond_queue_rejections_total")
                                 .Help(
                                     "Requests refused because a work queue was full, by "
                                     "queue.")
                                 .Register(r);
  for (const char* queue : kQueues) queue_rejections->Add({{"queue", queue}});

  Family<Histogram>& step_seconds = prometheus::BuildHistogram()
                             .Name("diffusiond_denoise_step_seconds")
                             .Help(
                                 "Seconds one model forward took (a Step call or one step "
                                 "of a Denoise call), by model.")
                             .Register(r);
  Family<Histogram>& denoise_seconds = prometheus::BuildHistogram()
                                .Name("diffusiond_denoise_seconds")
                                .Help(
                                    "Seconds a whole Denoise call took, by model and result "
                                    "(ok, cancelled or error).")
                                .Register(r);
  model_series = std::make_unique<ModelSeries>(&step_seconds, &denoise_seconds);
  generate_stage_seconds = &prometheus::BuildHistogram()
                                .Name("diffusiond_generate_stage_seconds")
                                .Help(
                                    "Seconds one stage of a Generate call took, by stage: load (per component), "
                                    "encode, denoise (per step), decode.")
                                .Register(r);
  for (const char* stage : kGenerateStages) generate_stage_seconds->Add({{"stage", stage}}, stage_buckets());
  generate_stage_device = &prometheus::BuildCounter()
                               .Name("diffusiond_generate_stage_runs_total")
                               .Help(
                                   "Encodes, denoise steps and decodes of Generate calls, by stage and by the device "
                                   "they ran on (cpu, sim, cuda:N).")
                               .Register(r);
}

// Calls by method appear with their first call: the methods are a bounded
// set (rpc_labels), but which of them a daemon serves depends on its clients.
void DaemonMetrics::Impl::register_calls(prometheus::Registry& r) {
  rpc_calls = &prometheus::BuildCounter()
                   .Name("diffusiond_grpc_requests_total")
                   .Help("gRPC calls finished, by service, method and status code.")
                   .Register(r);
  rpc_seconds = &prometheus::BuildHistogram()
                     .Name("diffusiond_grpc_request_seconds")
                     .Help(
                         "Seconds from a gRPC call's start to its status, by service and method; a streaming "
                         "call counts whole.")
                     .Register(r);
  ready = &prometheus::BuildGauge()
               .Name("diffusiond_ready")
               .Help("1 while the daemon is ready (health readiness SERVING); 0 while starting or draining.")
               .Register(r)
               .Add({});
  event_watchers = &prometheus::BuildGauge()
                        .Name("diffusiond_event_watchers")
                        .Help("WatchEvents streams open now.")
                        .Register(r)
                        .Add({});
}

// Every reason appears at 0 from the start, so that an alert on their rate
// has a series before the first refusal.
void DaemonMetrics::Impl::register_auth(prometheus::Registry& r) {
  auth_denials = &prometheus::BuildCounter()
                      .Name("diffusiond_auth_denied_total")
                      .Help(
                          "Calls refused by authentication (UNAUTHENTICATED) or authorization "
                          "(PERMISSION_DENIED), by reason.")
                      .Register(r);
  for (const char* reason : kAuthDenialReasons) auth_denials->Add({{"reason", reason}});
  Family<Counter>& reloads = prometheus::BuildCounter()
                                 .Name("diffusiond_auth_reloads_total")
                                 .Help(
                                     "Re-reads of a changed --auth_token_file, by result: ok (the new table is in "
                                     "force) or error (the previous table stays).")
                                 .Register(r);
  auth_reloads_ok = &reloads.Add({{"result", "ok"}});
  auth_reloads_error = &reloads.Add({{"result", "error"}});
}

DaemonMetrics::DaemonMetrics(const BuildInfo& build, std::function<CacheStats()> cache_stats,
                             std::function<std::vector<PlacementFigures>()> placements,
                             std::function<std::vector<QueueFigures>()> queues)
    : impl_(std::make_unique<Impl>(std::move(cache_stats), std::move(placements), std::move(queues))) {
  prometheus::Registry& r = *impl_->registry;

  prometheus::BuildGauge()
      .Name("diffusiond_build_info")
      .Help("Always 1; the labels say which diffusiond build is running.")
      .Register(r)
      .Add({{"version", build.version},
            {"torch_version", build.torch_version},
            {"cuda", build.cuda ? "true" : "false"},
            {"allocator", build.allocator}})
      .Set(1);
  prometheus::BuildGauge()
      .Name("diffusiond_blas_info")
      .Help(
          "Always 1; the labels say which BLAS kernels float32 matmuls run on, who chose them, and whether they "
          "are a generic fallback on a CPU that runs better ones.")
      .Register(r)
      .Add({{"library", build.blas_library},
            {"core", build.blas_core},
            {"chosen_by", build.blas_chosen_by},
            {"fallback", build.blas_fallback ? "true" : "false"}})
      .Set(1);
  prometheus::BuildGauge()
      .Name("diffusiond_compute_threads")
      .Help("Threads one forward may use (--threads; default: the cgroup CPU quota or the usable cores).")
      .Register(r)
      .Add({})
      .Set(build.compute_threads);

  impl_->register_cache_events(r);
  impl_->register_vram_events(r);
  impl_->register_work(r);
  impl_->register_calls(r);
  impl_->register_auth(r);
}

DaemonMetrics::~DaemonMetrics() = default;

void DaemonMetrics::on_cache_event(const CacheEvent& event) {
  switch (event.kind) {
    case CacheEvent::Kind::kLoaded:
      impl_->loads_ok->Increment();
      impl_->model_series->loaded(event.key);
      impl_->load_seconds->Observe(absl::ToDoubleSeconds(event.duration));
      for (int64_t bytes : event.bytes) impl_->load_bytes->Increment(static_cast<double>(bytes));
      return;
    case CacheEvent::Kind::kLoadFailed:
      switch (event.status.code()) {
        case absl::StatusCode::kResourceExhausted:
          impl_->loads_rejected->Increment();
          return;
        case absl::StatusCode::kCancelled:
          impl_->loads_cancelled->Increment();
          return;
        default:
          impl_->loads_error->Increment();
          return;
      }
    // A model that left the cache takes its series with it.
    case CacheEvent::Kind::kEvicted:
      impl_->evictions->Increment();
      impl_->model_series->forget(event.key);
      return;
    case CacheEvent::Kind::kUnloaded:
      impl_->unloads->Increment();
      impl_->model_series->forget(event.key);
      return;
    case CacheEvent::Kind::kRejected:
      impl_->admission_rejections->Increment();
      return;
    case CacheEvent::Kind::kWaitedForRoom:
      (event.status.ok() ? impl_->room_wait_admitted : impl_->room_wait_refused)
          ->Observe(absl::ToDoubleSeconds(event.duration));
      return;
  }
}

CacheObserver* DaemonMetrics::vram_observer() { return &impl_->vram_events; }

void DaemonMetrics::observe_step(absl::string_view model, absl::Duration took) {
  impl_->model_series->observe_step(model, absl::ToDoubleSeconds(took));
}

void DaemonMetrics::observe_denoise(absl::string_view model, absl::string_view result,
                                    absl::Duration took) {
  impl_->model_series->observe_denoise(model, result, absl::ToDoubleSeconds(took));
}

void DaemonMetrics::count_cancellation(absl::string_view operation) {
  impl_->cancellations->Add({{"operation", std::string(operation)}}).Increment();
}

void DaemonMetrics::count_queue_rejection(absl::string_view queue) {
  impl_->queue_rejections->Add({{"queue", std::string(queue)}}).Increment();
}

void DaemonMetrics::observe_rpc(absl::string_view service, absl::string_view method, absl::string_view code,
                                absl::Duration took) {
  impl_->rpc_calls
      ->Add({{"service", std::string(service)}, {"method", std::string(method)}, {"code", std::string(code)}})
      .Increment();
  impl_->rpc_seconds->Add({{"service", std::string(service)}, {"method", std::string(method)}}, rpc_buckets())
      .Observe(absl::ToDoubleSeconds(took));
}

void DaemonMetrics::observe_generate_stage(absl::string_view stage, absl::Duration took) {
  impl_->generate_stage_seconds->Add({{"stage", std::string(stage)}}, stage_buckets())
      .Observe(absl::ToDoubleSeconds(took));
}

void DaemonMetrics::count_auth_denial(absl::string_view reason) {
  impl_->auth_denials->Add({{"reason", std::string(reason)}}).Increment();
}

void DaemonMetrics::count_auth_reload(bool ok) {
  (ok ? impl_->auth_reloads_ok : impl_->auth_reloads_error)->Increment();
}

void DaemonMetrics::count_generate_stage_device(absl::string_view stage, absl::string_view device) {
  impl_->generate_stage_device->Add({{"stage", std::string(stage)}, {"device", std::string(device)}}).Increment();
}

void DaemonMetrics::set_ready(bool ready) { impl_->ready->Set(ready ? 1 : 0); }

void DaemonMetrics::add_event_watchers(int delta) { impl_->event_watchers->Increment(delta); }

std::shared_ptr<prometheus::Registry> DaemonMetrics::registry() const { return impl_->registry; }

std::vector<std::shared_ptr<prometheus::Collectable>> DaemonMetrics::collectables() const {
  return {impl_->registry, impl_->process, impl_->memory_limit, impl_->cache, impl_->placed, impl_->queued};
}

std::string DaemonMetrics::scrape_text() const {
  std::vector<prometheus::MetricFamily> families;
  for (const std::shared_ptr<prometheus::Collectable>& c : collectables()) {
    std::vector<prometheus::MetricFamily> more = c->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace diffusiond
