#include "server/queue_collector.h"

#include "server/internal/metric_family.h"

namespace diffusiond {

std::vector<prometheus::MetricFamily> QueueCollector::Collect() const {
  if (!source_) return {};
  return families(source_());
}

std::vector<prometheus::MetricFamily> QueueCollector::families(const std::vector<QueueFigures>& queues) {
  using prometheus::MetricType;
  prometheus::MetricFamily running = internal::make_family(
      "diffusiond_queue_running_tasks", "Tasks a work queue's workers run now, by queue.", MetricType::Gauge);
  prometheus::MetricFamily waiting =
      internal::make_family("diffusiond_queue_waiting_tasks",
                            "Tasks waiting in a work queue for a free worker, by queue.", MetricType::Gauge);
  prometheus::MetricFamily workers = internal::make_family(
      "diffusiond_queue_workers", "Tasks a work queue runs at once, by queue.", MetricType::Gauge);
  prometheus::MetricFamily capacity = internal::make_family(
      "diffusiond_queue_capacity_tasks",
      "Tasks that may wait in a work queue, by queue; a call beyond is refused with RESOURCE_EXHAUSTED.",
      MetricType::Gauge);
  for (const QueueFigures& q : queues) {
    const std::vector<prometheus::ClientMetric::Label> labels = {{"queue", q.queue}};
    internal::add_sample(&running, q.running, labels);
    internal::add_sample(&waiting, q.waiting, labels);
    internal::add_sample(&workers, q.workers, labels);
    internal::add_sample(&capacity, q.capacity, labels);
  }
  std::vector<prometheus::MetricFamily> out;
  internal::append_nonempty({std::move(running), std::move(waiting), std::move(workers), std::move(capacity)}, &out);
  return out;
}

}  // namespace diffusiond
