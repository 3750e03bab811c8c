#include "core/memory/default_budget.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;

TEST(DefaultRamBudget, UsesMemTotalWhenUnlimited) {
  MachineMemory m;
  m.mem_total_bytes = 32 * kGiB;
  EXPECT_EQ(default_ram_budget_bytes(m, {0.5, 1 * kGiB}), 15 * kGiB);
}

TEST(DefaultRamBudget, CgroupLimitWinsWhenSmaller) {
  MachineMemory m;
  m.mem_total_bytes = 64 * kGiB;
  m.cgroup_limit_bytes = 16 * kGiB;
  EXPECT_EQ(default_ram_budget_bytes(m, {0.5, 1 * kGiB}), 7 * kGiB);
  m.cgroup_limit_bytes = 128 * kGiB;  // larger than the machine: ignored
  EXPECT_EQ(default_ram_budget_bytes(m, {0.5, 1 * kGiB}), 31 * kGiB);
}

TEST(DefaultRamBudget, NeverNegative) {
  MachineMemory m;
  m.mem_total_bytes = 256 * kMiB;
  EXPECT_EQ(default_ram_budget_bytes(m), 0);
}

TEST(DefaultRamBudget, DefaultOptionsAreDocumentedValues) {
  MachineMemory m;
  m.mem_total_bytes = 20 * kGiB;
  EXPECT_EQ(default_ram_budget_bytes(m), 17 * kGiB - 512 * kMiB);
}

TEST(ProbeMachineMemory, ReadsThisMachine) {
  absl::StatusOr<MachineMemory> m = probe_machine_memory();
  ASSERT_THAT(m, IsOk());
  EXPECT_GT(m->mem_total_bytes, 0);
}

}  // namespace
}  // namespace diffusiond
