#include "server/cache_stats_collector.h"

#include <string>
#include <utility>

#include "core/memory/device.h"
#include "server/internal/metric_family.h"

namespace diffusiond {
namespace {

using internal::add_sample;
using internal::make_family;
using prometheus::MetricFamily;
using prometheus::MetricType;

using Label = prometheus::ClientMetric::Label;

Label device_label(Device device) { return {"device", std::string(device_name(device))}; }
Label model_label(const std::string& key) { return {"model", key}; }

}  // namespace

std::vector<MetricFamily> CacheStatsCollector::Collect() const {
  if (!source_) return {};
  return families(source_());
}

std::vector<MetricFamily> CacheStatsCollector::families(const CacheStats& stats) {
  MetricFamily budget = make_family(
      "diffusiond_memory_budget_bytes",
      "Bytes of the device's memory the daemon may use for model weights.", MetricType::Gauge);
  MetricFamily reserved = make_family(
      "diffusiond_memory_reserved_bytes",
      "Bytes admitted for work in flight (loads, activations of calls), not yet held by a model.", MetricType::Gauge);
  MetricFamily used =
      make_family("diffusiond_memory_used_bytes",
                  "Bytes held by loaded models (committed to the budget).", MetricType::Gauge);
  MetricFamily high_water = make_family(
      "diffusiond_memory_high_water_bytes",
      "Highest reserved plus used bytes seen since the daemon started.", MetricType::Gauge);
  for (const BudgetSnapshot& b : stats.budgets) {
    add_sample(&budget, static_cast<double>(b.capacity_bytes), {device_label(b.device)});
    add_sample(&reserved, static_cast<double>(b.reserved_bytes), {device_label(b.device)});
    add_sample(&used, static_cast<double>(b.committed_bytes), {device_label(b.device)});
    add_sample(&high_water, static_cast<double>(b.high_water_bytes), {device_label(b.device)});
  }

  MetricFamily resident = make_family(
      "diffusiond_model_resident_bytes",
      "Bytes a loaded model holds on a device (cpu always; cuda when it has any there).",
      MetricType::Gauge);
  MetricFamily pins = make_family(
      "diffusiond_model_pins",
      "Requests and leases currently using a loaded model; a pinned model cannot be evicted.",
      MetricType::Gauge);
  int loaded = 0;
  for (const CacheEntryStats& entry : stats.entries) {
    if (entry.loading) continue;
    ++loaded;
    for (Device device : all_devices()) {
      const int64_t bytes = entry.bytes[static_cast<int>(device)];
      // A CPU-only model would otherwise carry a constant cuda=0 series.
      if (device != Device::kCpu && bytes == 0) continue;
      add_sample(&resident, static_cast<double>(bytes),
                 {model_label(entry.key), device_label(device)});
    }
    add_sample(&pins, entry.pins, {model_label(entry.key)});
  }
  MetricFamily models_loaded =
      make_family("diffusiond_models_loaded",
                  "Models fully loaded in the cache (draining ones included).", MetricType::Gauge);
  add_sample(&models_loaded, loaded);

  MetricFamily hits = make_family(
      "diffusiond_cache_hits_total",
      "Model requests served by a model already loaded, or by a load another request started.",
      MetricType::Counter);
  add_sample(&hits, static_cast<double>(stats.hits));
  MetricFamily misses =
      make_family("diffusiond_cache_misses_total", "Model requests that had to start a load.",
                  MetricType::Counter);
  add_sample(&misses, static_cast<double>(stats.misses));
  MetricFamily waiting = make_family(
      "diffusiond_memory_waiting_requests",
      "Requests waiting in line for room that work in flight holds (docs/memory-budget.md).", MetricType::Gauge);
  add_sample(&waiting, stats.room_waiting);
  MetricFamily leases_expired = make_family(
      "diffusiond_cache_leases_expired_total",
      "Model leases dropped because their holder did not renew them in time.", MetricType::Counter);
  add_sample(&leases_expired, static_cast<double>(stats.leases_expired));

  std::vector<MetricFamily> out;
  internal::append_nonempty({std::move(budget), std::move(reserved), std::move(used), std::move(high_water),
                             std::move(resident), std::move(pins), std::move(models_loaded), std::move(hits),
                             std::move(misses), std::move(waiting), std::move(leases_expired)},
                            &out);
  return out;
}

}  // namespace diffusiond
