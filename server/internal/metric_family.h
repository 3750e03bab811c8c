// Helpers for the scrape-time collectors (process_collector.cc,
// cache_stats_collector.cc): building prometheus::MetricFamily values by
// hand, since their samples are read fresh at each scrape rather than kept
// in a prometheus::Registry.
#ifndef DIFFUSIOND_SERVER_INTERNAL_METRIC_FAMILY_H_
#define DIFFUSIOND_SERVER_INTERNAL_METRIC_FAMILY_H_

#include <cassert>
#include <string>
#include <utility>
#include <vector>

#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace diffusiond::internal {

// Returns a family with no samples yet. REQUIRES: `type` is Gauge or Counter.
inline prometheus::MetricFamily make_family(std::string name, std::string help,
                                            prometheus::MetricType type) {
  assert(type == prometheus::MetricType::Gauge || type == prometheus::MetricType::Counter);
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

// Appends one sample; `labels` are written in the order given.
inline void add_sample(prometheus::MetricFamily* family, double value,
                       std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  if (family->type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family->metric.push_back(std::move(metric));
}

// Moves the families that have samples onto `out`: a family without samples
// would be a HELP/TYPE header over nothing.
inline void append_nonempty(std::vector<prometheus::MetricFamily> families,
                            std::vector<prometheus::MetricFamily>* out) {
  for (prometheus::MetricFamily& family : families) {
    if (!family.metric.empty()) out->push_back(std::move(family));
  }
}

}  // namespace diffusiond::internal

#endif  // DIFFUSIOND_SERVER_INTERNAL_METRIC_FAMILY_H_
