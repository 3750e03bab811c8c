#include "core/vram/residency_plan.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ResidencyInput ten_blocks(int64_t budget) {
  ResidencyInput in;
  in.global_bytes = 100;
  for (int i = 0; i < 10; ++i) in.blocks.push_back({"layers." + std::to_string(i), 50});
  in.budget_bytes = budget;
  return in;
}

TEST(VramResidencyPlanTest, EverythingStaysWhenItFits) {
  absl::StatusOr<ResidencyPlan> plan = plan_residency(ten_blocks(600));
  ASSERT_THAT(plan, IsOk());
  EXPECT_TRUE(plan->fully_resident());
  EXPECT_EQ(plan->resident_blocks, 10);
  EXPECT_EQ(plan->device_bytes(), 600);
  EXPECT_EQ(plan->streamed_bytes_per_forward, 0);
  EXPECT_EQ(plan->summary(), "all 10 blocks resident");
}

TEST(VramResidencyPlanTest, KeepsWhatFitsAndStreamsTheRestSpreadOutThroughTwoSlots) {
  // 100 globals + 2 slots of 50 leave 150: three blocks stay, spread out.
  absl::StatusOr<ResidencyPlan> plan = plan_residency(ten_blocks(350));
  ASSERT_THAT(plan, IsOk());
  EXPECT_EQ(plan->resident_blocks, 3);
  EXPECT_THAT(plan->resident, ElementsAre(false, true, false, false, true, false, false, false, true, false));
  EXPECT_EQ(plan->slots, 2);
  EXPECT_EQ(plan->slot_bytes, 50);
  EXPECT_EQ(plan->resident_bytes, 250);
  EXPECT_EQ(plan->device_bytes(), 350);
  EXPECT_EQ(plan->streamed_bytes_per_forward, 350);
  EXPECT_LE(plan->device_bytes(), 350);
}

TEST(VramResidencyPlanTest, HalfStreamedAlternatesFromAResidentFirstBlock) {
  // 100 + 5 x 50 + 2 slots of 50.
  absl::StatusOr<ResidencyPlan> plan = plan_residency(ten_blocks(450));
  ASSERT_THAT(plan, IsOk());
  EXPECT_THAT(plan->resident, ElementsAre(true, false, true, false, true, false, true, false, true, false));
  EXPECT_EQ(plan->device_bytes(), 450);
  EXPECT_EQ(plan->streamed_bytes_per_forward, 250);
}

TEST(VramResidencyPlanTest, StreamsOnlyBlocksAsSmallAsTheTailWould) {
  // Two large blocks, then six small ones (FLUX: double, then single
  // blocks). Streaming the last three small ones fits: 40 + 40 + 30 + 2 x 10.
  ResidencyInput in;
  in.blocks = {{"d.0", 40}, {"d.1", 40}, {"s.0", 10}, {"s.1", 10}, {"s.2", 10}, {"s.3", 10}, {"s.4", 10}, {"s.5", 10}};
  in.budget_bytes = 130;
  absl::StatusOr<ResidencyPlan> plan = plan_residency(in);
  ASSERT_THAT(plan, IsOk());
  EXPECT_THAT(plan->resident, ElementsAre(true, true, true, false, true, false, true, false));
  EXPECT_EQ(plan->slot_bytes, 10);
  EXPECT_EQ(plan->streamed_bytes_per_forward, 30);
  EXPECT_EQ(plan->device_bytes(), 130);
}

TEST(VramResidencyPlanTest, KeepsTheLastBlocksStreamedWhenSpreadingThemDoesNotFit) {
  // The tail streams 5 + 20 + 20 through slots of 20: 15 + 40 = 55. Spread
  // out, it would stream 5 + 5 + 20 and keep 30 resident: 30 + 40 = 70.
  ResidencyInput in;
  in.blocks = {{"a.0", 5}, {"a.1", 5}, {"a.2", 5}, {"a.3", 5}, {"a.4", 20}, {"a.5", 20}};
  in.budget_bytes = 59;
  absl::StatusOr<ResidencyPlan> plan = plan_residency(in);
  ASSERT_THAT(plan, IsOk());
  EXPECT_THAT(plan->resident, ElementsAre(true, true, true, false, false, false));
  EXPECT_EQ(plan->device_bytes(), 55);
}

TEST(VramResidencyPlanTest, TheSameInputGivesTheSamePlan) {
  for (int64_t budget : {200, 260, 333, 599}) {
    absl::StatusOr<ResidencyPlan> a = plan_residency(ten_blocks(budget)), b = plan_residency(ten_blocks(budget));
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    EXPECT_EQ(a->resident, b->resident);
    EXPECT_EQ(a->device_bytes(), b->device_bytes());
    EXPECT_LE(a->device_bytes(), budget);
  }
}

TEST(VramResidencyPlanTest, SlotsAreSizedForTheLargestStreamedBlock) {
  ResidencyInput in;
  in.global_bytes = 0;
  in.blocks = {{"a.0", 80}, {"a.1", 10}, {"a.2", 20}, {"a.3", 30}, {"a.4", 5}};
  // Keeping a.0 resident makes the slots 30 each: 80 + 60 = 140.
  in.budget_bytes = 144;
  absl::StatusOr<ResidencyPlan> plan = plan_residency(in);
  ASSERT_THAT(plan, IsOk());
  EXPECT_EQ(plan->resident_blocks, 1);
  EXPECT_EQ(plan->slot_bytes, 30);
  // One byte less: a.0 would stream, and its slots alone need 2 x 80.
  in.budget_bytes = 139;
  EXPECT_THAT(plan_residency(in), StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("at least 160 bytes")));
}

TEST(VramResidencyPlanTest, ABudgetBelowTwoSlotsOfTheLargestBlockIsRefusedNamingTheMinimum) {
  EXPECT_THAT(plan_residency(ten_blocks(199)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("199 bytes of VRAM for weights"), HasSubstr("at least 200 bytes"),
                             HasSubstr("2 streaming slots"), HasSubstr("largest block, 50 bytes"))));
  EXPECT_EQ(residency_minimum_bytes(ten_blocks(199)), 200);
  ASSERT_THAT(plan_residency(ten_blocks(200)), IsOk());
  EXPECT_EQ(plan_residency(ten_blocks(200))->resident_blocks, 0);
}

TEST(VramResidencyPlanTest, OneStreamedBlockNeedsOneSlot) {
  ResidencyInput in;
  in.global_bytes = 10;
  in.blocks = {{"a.0", 40}};
  in.budget_bytes = 50;
  ASSERT_THAT(plan_residency(in), IsOk());
  EXPECT_TRUE(plan_residency(in)->fully_resident());
  in.budget_bytes = 49;
  EXPECT_THAT(plan_residency(in), StatusIs(absl::StatusCode::kResourceExhausted, ::testing::_));
}

TEST(VramResidencyPlanTest, NegativeSizesAreRefused) {
  ResidencyInput in = ten_blocks(100);
  in.blocks[3].bytes = -1;
  EXPECT_THAT(plan_residency(in), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

}  // namespace
}  // namespace diffusiond
