// diffusiond_memory_limit_bytes: the smaller of the cgroup limit and
// MemTotal, over sample trees laid out as /proc and /sys/fs/cgroup.
#include "server/memory_limit_collector.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

constexpr const char kLimitTestMemInfo[] = "MemTotal:       16777216 kB\nMemFree:        1024 kB\n";  // 16 GiB

// Returns the one sample's value; fails unless there is exactly one.
double memory_limit_sample(const MemoryLimitCollector& collector) {
  const std::vector<prometheus::MetricFamily> families = collector.Collect();
  EXPECT_EQ(families.size(), 1u);
  if (families.size() != 1 || families[0].metric.size() != 1) return -1;
  EXPECT_EQ(families[0].name, "diffusiond_memory_limit_bytes");
  EXPECT_EQ(families[0].type, prometheus::MetricType::Gauge);
  EXPECT_EQ(families[0].metric[0].label.at(0).name, "device");
  EXPECT_EQ(families[0].metric[0].label.at(0).value, "cpu");
  return families[0].metric[0].gauge.value;
}

TEST(MemoryLimitCollector, CgroupLimitBelowMemTotal) {
  testing::TempDir root;
  root.write("proc/meminfo", kLimitTestMemInfo);
  root.write("proc/self/cgroup", "0::/\n");
  root.write("sys/fs/cgroup/memory.max", "4294967296\n");
  EXPECT_EQ(memory_limit_sample(MemoryLimitCollector(root.path())), 4294967296.0);
}

TEST(MemoryLimitCollector, MemTotalWithoutACgroupLimit) {
  testing::TempDir root;
  root.write("proc/meminfo", kLimitTestMemInfo);
  root.write("proc/self/cgroup", "0::/\n");
  root.write("sys/fs/cgroup/memory.max", "max\n");
  EXPECT_EQ(memory_limit_sample(MemoryLimitCollector(root.path())), 16.0 * 1024 * 1024 * 1024);
}

TEST(MemoryLimitCollector, UnreadableMachineReportsNothing) {
  testing::TempDir root;  // no /proc/meminfo
  EXPECT_TRUE(MemoryLimitCollector(root.path()).Collect().empty());
}

TEST(MemoryLimitCollector, ReadsThisMachine) { EXPECT_GT(memory_limit_sample(MemoryLimitCollector()), 0); }

}  // namespace
}  // namespace diffusiond
