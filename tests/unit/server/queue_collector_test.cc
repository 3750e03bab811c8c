// The work queues' scrape-time series: four per queue, none without queues.
#include "server/queue_collector.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

TEST(QueueCollector, FourGaugesPerQueueLabelledByQueue) {
  const std::vector<prometheus::MetricFamily> families =
      QueueCollector::families({{"load", 1, 0, 2, 32}, {"compute", 1, 8, 1, 8}});
  ASSERT_EQ(families.size(), 4u);
  std::vector<std::string> names;
  for (const prometheus::MetricFamily& f : families) {
    names.push_back(f.name);
    EXPECT_EQ(f.type, prometheus::MetricType::Gauge) << f.name;
    ASSERT_EQ(f.metric.size(), 2u) << f.name;
    EXPECT_EQ(f.metric[1].label.at(0).name, "queue");
    EXPECT_EQ(f.metric[1].label.at(0).value, "compute");
  }
  EXPECT_THAT(names, ::testing::ElementsAre("diffusiond_queue_running_tasks", "diffusiond_queue_waiting_tasks",
                                            "diffusiond_queue_workers", "diffusiond_queue_capacity_tasks"));
  EXPECT_EQ(families[1].metric[1].gauge.value, 8);   // compute: waiting
  EXPECT_EQ(families[3].metric[0].gauge.value, 32);  // load: capacity
}

TEST(QueueCollector, NoQueuesOrNoSourceReportsNoFamily) {
  EXPECT_TRUE(QueueCollector::families({}).empty());
  EXPECT_TRUE(QueueCollector(nullptr).Collect().empty());
  EXPECT_TRUE(QueueCollector([] { return std::vector<QueueFigures>{}; }).Collect().empty());
}

}  // namespace
}  // namespace diffusiond
