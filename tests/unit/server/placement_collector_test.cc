// The placements' scrape-time series: one per placed model, none without.
#include "server/placement_collector.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

TEST(PlacementCollector, OneStreamedBytesSamplePerPlacement) {
  const std::vector<prometheus::MetricFamily> families =
      PlacementCollector::families({{"a", 0}, {"b", 1 << 20}});
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "diffusiond_model_vram_step_streamed_bytes");
  EXPECT_EQ(families[0].type, prometheus::MetricType::Gauge);
  ASSERT_EQ(families[0].metric.size(), 2u);
  EXPECT_EQ(families[0].metric[1].label[0].name, "model");
  EXPECT_EQ(families[0].metric[1].label[0].value, "b");
  EXPECT_EQ(families[0].metric[1].gauge.value, 1 << 20);
}

TEST(PlacementCollector, NothingPlacedOrNoSourceReportsNoFamily) {
  EXPECT_TRUE(PlacementCollector::families({}).empty());
  EXPECT_TRUE(PlacementCollector(nullptr).Collect().empty());
}

}  // namespace
}  // namespace diffusiond
