#include "core/memory/default_threads.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;

MachineCpus cpus(int usable, std::optional<double> quota = std::nullopt) {
  MachineCpus m;
  m.usable = usable;
  m.cgroup_cpus = quota;
  return m;
}

TEST(DefaultComputeThreads, UsableCpusWithoutAQuota) {
  EXPECT_EQ(default_compute_threads(cpus(32)), 32);
}

TEST(DefaultComputeThreads, QuotaBelowTheCoresWinsRoundedDown) {
  EXPECT_EQ(default_compute_threads(cpus(32, 2.5)), 2);
  EXPECT_EQ(default_compute_threads(cpus(2, 8.0)), 2);
}

TEST(DefaultComputeThreads, NeverBelowOne) {
  EXPECT_EQ(default_compute_threads(cpus(4, 0.25)), 1);
  EXPECT_EQ(default_compute_threads(cpus(0)), 1);
}

TEST(ProbeMachineCpus, ThisMachineHasAtLeastOneUsableCpu) {
  absl::StatusOr<MachineCpus> machine = probe_machine_cpus();
  ASSERT_THAT(machine, IsOk());
  EXPECT_GE(machine->usable, 1);
  EXPECT_GE(default_compute_threads(*machine), 1);
}

}  // namespace
}  // namespace diffusiond
