// QueueCollector: the depth of the daemon's work queues (core/util/work_queue.h),
// read at each scrape: tasks running and waiting in each queue, against its
// workers and the most tasks that may wait. A queue whose waiting line is
// full refuses calls (diffusiond_queue_rejections_total counts them).
//
// Not here: the queues (core/util), which know nothing of Prometheus.
#ifndef DIFFUSIOND_SERVER_QUEUE_COLLECTOR_H_
#define DIFFUSIOND_SERVER_QUEUE_COLLECTOR_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace diffusiond {

// One queue's figures at one moment.
struct QueueFigures {
  std::string queue;  // the `queue` label: load, compute or unload
  int running = 0;    // tasks on a worker now
  int waiting = 0;    // tasks accepted, not started
  int workers = 0;    // tasks that may run at once
  int capacity = 0;   // tasks that may wait; a call beyond is refused
};

// Thread-safe if `source` is: each scrape calls it once.
class QueueCollector final : public prometheus::Collectable {
 public:
  // `source` returns the queues' figures now; an empty function, or one
  // returning none (before the queues exist, after the drain), reports
  // nothing.
  explicit QueueCollector(std::function<std::vector<QueueFigures>()> source) : source_(std::move(source)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

  // Returns the families describing `queues`.
  static std::vector<prometheus::MetricFamily> families(const std::vector<QueueFigures>& queues);

 private:
  const std::function<std::vector<QueueFigures>()> source_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_QUEUE_COLLECTOR_H_
