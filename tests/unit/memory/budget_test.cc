#include "core/memory/budget.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

TEST(Budget, ReserveWithinCapacity) {
  Budget budget(Device::kCpu, 1000);
  absl::StatusOr<Reservation> r = budget.reserve(600);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->reserved_bytes(), 600);
  EXPECT_EQ(budget.snapshot().reserved_bytes, 600);
  EXPECT_EQ(budget.available_bytes(), 400);
}

TEST(Budget, RefusesOverCapacityNamingNeededAndAvailable) {
  Budget budget(Device::kCpu, 1000);
  absl::StatusOr<Reservation> held = budget.reserve(700);
  ASSERT_THAT(held, IsOk());
  EXPECT_THAT(budget.reserve(301),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("cannot reserve 301 bytes: available 300 bytes")));
  EXPECT_EQ(budget.snapshot().reserved_bytes, 700);
}

TEST(Reservation, DestructionReleasesEverything) {
  Budget budget(Device::kCpu, 1000);
  {
    absl::StatusOr<Reservation> r = budget.reserve(500);
    ASSERT_THAT(r, IsOk());
    ASSERT_THAT(r->charge(200), IsOk());
  }
  const BudgetSnapshot s = budget.snapshot();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.committed_bytes, 0);
  EXPECT_EQ(s.high_water_bytes, 500);
}

TEST(Budget, ResetHighWaterStartsFromWhatIsHeldNow) {
  Budget budget(Device::kCpu, 1000);
  absl::StatusOr<Reservation> held = budget.reserve(300);
  ASSERT_THAT(held, IsOk());
  { ASSERT_THAT(budget.reserve(600), IsOk()); }
  EXPECT_EQ(budget.snapshot().high_water_bytes, 900);
  budget.reset_high_water();
  EXPECT_EQ(budget.snapshot().high_water_bytes, 300);
  { ASSERT_THAT(budget.reserve(100), IsOk()); }
  EXPECT_EQ(budget.snapshot().high_water_bytes, 400);
}

TEST(Reservation, ChargeBeyondReservationFailsAndRecordsNothing) {
  Budget budget(Device::kCpu, 1000);
  absl::StatusOr<Reservation> r = budget.reserve(100);
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT(r->charge(60), IsOk());
  EXPECT_THAT(r->charge(41), StatusIs(absl::StatusCode::kResourceExhausted,
                                      HasSubstr("exceeds the reservation")));
  EXPECT_EQ(r->charged_bytes(), 60);
  r->uncharge(60);
  EXPECT_THAT(r->charge(100), IsOk());
}

TEST(Reservation, CommitKeepsChargedBytesAndReleasesTheRest) {
  Budget budget(Device::kCpu, 1000);
  absl::StatusOr<Reservation> r = budget.reserve(500);
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT(r->charge(320), IsOk());
  Charge charge = std::move(*r).commit();
  EXPECT_EQ(charge.bytes(), 320);
  EXPECT_FALSE(r->holds_bytes());
  BudgetSnapshot s = budget.snapshot();
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.committed_bytes, 320);
  charge.release();
  EXPECT_EQ(budget.snapshot().committed_bytes, 0);
}

TEST(Reservation, ShrinkNeverGoesBelowCharged) {
  Budget budget(Device::kCpu, 1000);
  absl::StatusOr<Reservation> r = budget.reserve(500);
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT(r->charge(200), IsOk());
  r->shrink_to(100);
  EXPECT_EQ(r->reserved_bytes(), 200);
  EXPECT_EQ(budget.snapshot().reserved_bytes, 200);
}

TEST(Reservation, MoveTransfersOwnership) {
  Budget budget(Device::kCpu, 1000);
  absl::StatusOr<Reservation> r = budget.reserve(300);
  ASSERT_THAT(r, IsOk());
  Reservation moved = std::move(*r);
  EXPECT_EQ(moved.reserved_bytes(), 300);
  EXPECT_FALSE(r->holds_bytes());
  moved = Reservation();
  EXPECT_EQ(budget.snapshot().reserved_bytes, 0);
}

TEST(Charge, MergeAddsBytesFromTheSameBudget) {
  Budget budget(Device::kCpu, 1000);
  absl::StatusOr<Reservation> a = budget.reserve(100);
  absl::StatusOr<Reservation> b = budget.reserve(200);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(a->charge(100), IsOk());
  ASSERT_THAT(b->charge(150), IsOk());
  Charge total = std::move(*a).commit();
  total.merge(std::move(*b).commit());
  EXPECT_EQ(total.bytes(), 250);
  EXPECT_EQ(budget.snapshot().committed_bytes, 250);
  total = Charge();
  EXPECT_EQ(budget.snapshot().committed_bytes, 0);
}

}  // namespace
}  // namespace diffusiond
