#include "core/memory/cgroup.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

namespace fs = std::filesystem;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;
using Version = CgroupMemoryLimit::Version;

// A fake filesystem root holding only the files a test writes.
class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) {
    const fs::path p = root_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  absl::StatusOr<CgroupMemoryLimit> read() {
    return read_cgroup_memory_limit(root_.string());
  }

  fs::path root_;
};

TEST(ParseCgroupLimit, AcceptsNumbersMaxAndTheV1Sentinel) {
  absl::StatusOr<std::optional<int64_t>> n = parse_cgroup_limit("8589934592\n");
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->value(), 8589934592);
  absl::StatusOr<std::optional<int64_t>> max = parse_cgroup_limit("max\n");
  ASSERT_THAT(max, IsOk());
  EXPECT_FALSE(max->has_value());
  absl::StatusOr<std::optional<int64_t>> v1 = parse_cgroup_limit("9223372036854771712");
  ASSERT_THAT(v1, IsOk());
  EXPECT_FALSE(v1->has_value());
}

TEST(ParseCgroupLimit, RejectsGarbage) {
  EXPECT_THAT(parse_cgroup_limit("12G"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'12G'")));
  EXPECT_THAT(parse_cgroup_limit("-5"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'-5'")));
  EXPECT_THAT(parse_cgroup_limit(""), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("''")));
}

TEST_F(CgroupTest, V2LimitInNamespacedRoot) {
  write("proc/self/cgroup", "0::/\n");
  write("sys/fs/cgroup/memory.max", "4294967296\n");
  absl::StatusOr<CgroupMemoryLimit> limit = read();
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->version, Version::kV2);
  EXPECT_EQ(limit->limit_bytes, 4294967296);
  EXPECT_THAT(limit->source, HasSubstr("sys/fs/cgroup/memory.max"));
}

TEST_F(CgroupTest, V2MaxMeansUnlimited) {
  write("proc/self/cgroup", "0::/\n");
  write("sys/fs/cgroup/memory.max", "max\n");
  absl::StatusOr<CgroupMemoryLimit> limit = read();
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->version, Version::kV2);
  EXPECT_FALSE(limit->limit_bytes.has_value());
}

TEST_F(CgroupTest, V2TakesTheTightestAncestor) {
  write("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  write("sys/fs/cgroup/kubepods/memory.max", "max\n");
  write("sys/fs/cgroup/kubepods/pod1/memory.max", "2147483648\n");
  write("sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "3221225472\n");
  absl::StatusOr<CgroupMemoryLimit> limit = read();
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->limit_bytes, 2147483648);
  EXPECT_THAT(limit->source, HasSubstr("pod1/memory.max"));
}

TEST_F(CgroupTest, V1LimitAndUnlimitedSentinel) {
  write("proc/self/cgroup", "12:cpu,cpuacct:/\n9:memory:/docker/abc\n");
  write("sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824\n");
  absl::StatusOr<CgroupMemoryLimit> limit = read();
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->version, Version::kV1);
  EXPECT_EQ(limit->limit_bytes, 1073741824);

  write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  limit = read();
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->version, Version::kV1);
  EXPECT_FALSE(limit->limit_bytes.has_value());
}

TEST_F(CgroupTest, MissingFilesMeanNoLimit) {
  absl::StatusOr<CgroupMemoryLimit> limit = read();  // no proc/self/cgroup
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->version, Version::kNone);
  EXPECT_FALSE(limit->limit_bytes.has_value());

  write("proc/self/cgroup", "0::/\n");  // no memory.max anywhere
  limit = read();
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->version, Version::kNone);
  EXPECT_FALSE(limit->limit_bytes.has_value());
}

TEST_F(CgroupTest, UnparsableLimitFileIsAnErrorNamingTheFile) {
  write("proc/self/cgroup", "0::/\n");
  write("sys/fs/cgroup/memory.max", "lots\n");
  EXPECT_THAT(read(), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("memory.max: expected a byte count")));
}

TEST(ParseCgroupCpuMax, QuotaOverPeriodMaxAndDefaultPeriod) {
  absl::StatusOr<std::optional<double>> q = parse_cgroup_cpu_max("250000 100000\n");
  ASSERT_THAT(q, IsOk());
  EXPECT_DOUBLE_EQ(q->value(), 2.5);
  absl::StatusOr<std::optional<double>> lone = parse_cgroup_cpu_max("50000");
  ASSERT_THAT(lone, IsOk());
  EXPECT_DOUBLE_EQ(lone->value(), 0.5);
  absl::StatusOr<std::optional<double>> max = parse_cgroup_cpu_max("max 100000\n");
  ASSERT_THAT(max, IsOk());
  EXPECT_FALSE(max->has_value());
}

TEST(ParseCgroupCpuMax, RejectsGarbage) {
  for (const char* bad : {"", "lots", "0 100000", "200000 0", "1 2 3", "-5 100000"}) {
    EXPECT_THAT(parse_cgroup_cpu_max(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected")))
        << bad;
  }
}

TEST_F(CgroupTest, V2CpuQuotaTakesTheTightestAncestor) {
  write("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  write("sys/fs/cgroup/kubepods/cpu.max", "max 100000\n");
  write("sys/fs/cgroup/kubepods/pod1/cpu.max", "300000 100000\n");
  write("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "150000 100000\n");
  absl::StatusOr<CgroupCpuLimit> limit = read_cgroup_cpu_limit(root_.string());
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->version, CgroupVersion::kV2);
  EXPECT_DOUBLE_EQ(limit->cpus.value(), 1.5);
  EXPECT_THAT(limit->source, HasSubstr("ctr/cpu.max"));
}

TEST_F(CgroupTest, V1CpuQuotaOverPeriodInTheCoMountedController) {
  write("proc/self/cgroup", "12:cpu,cpuacct:/docker/abc\n9:memory:/docker/abc\n");
  write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "400000\n");
  write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  absl::StatusOr<CgroupCpuLimit> limit = read_cgroup_cpu_limit(root_.string());
  ASSERT_THAT(limit, IsOk());
  EXPECT_EQ(limit->version, CgroupVersion::kV1);
  EXPECT_DOUBLE_EQ(limit->cpus.value(), 4.0);
}

TEST_F(CgroupTest, NoCpuQuotaAndBadQuotaNamesTheFile) {
  write("proc/self/cgroup", "0::/\n");
  absl::StatusOr<CgroupCpuLimit> none = read_cgroup_cpu_limit(root_.string());
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->cpus.has_value());
  write("sys/fs/cgroup/cpu.max", "plenty\n");
  EXPECT_THAT(read_cgroup_cpu_limit(root_.string()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cpu.max: expected")));
}

TEST(CgroupLive, ReadsThisMachineWithoutError) {
  EXPECT_THAT(read_cgroup_memory_limit(), IsOk());
  EXPECT_THAT(read_cgroup_cpu_limit(), IsOk());
}

}  // namespace
}  // namespace diffusiond
