// The VRAM tier's admission, torch-free: placements are fake values whose
// charges stand for device memory. The tier evicts them to RAM (drops
// them), never over-commits, and returns to zero.
#include "core/vram/vram_tier.h"

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;

// A placement's device memory: a counter that must return to zero.
class FakePlacement final : public CacheValue {
 public:
  FakePlacement(std::atomic<int64_t>* live, int64_t bytes) : live_(live), bytes_(bytes) { *live_ += bytes; }
  ~FakePlacement() override { *live_ -= bytes_; }

 private:
  std::atomic<int64_t>* const live_;
  const int64_t bytes_;
};

class VramTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    VramTierOptions o;
    o.vram_budget = &budget_;
    absl::StatusOr<std::unique_ptr<VramTier>> tier = VramTier::create(o);
    ASSERT_THAT(tier, IsOk());
    tier_ = std::move(*tier);
  }
  // Places `key` with `bytes` of device memory, as the engine's placer does.
  Loader placer(int64_t bytes) {
    return [this, bytes]() -> absl::StatusOr<LoadedValue> {
      absl::StatusOr<Reservation> r = tier_->make_room(bytes);
      if (!r.ok()) return r.status();
      if (absl::Status s = r->charge(bytes); !s.ok()) return s;
      LoadedValue v;
      v.value = std::make_unique<FakePlacement>(&live_, bytes);
      v.reservations.push_back(std::move(*r));
      return v;
    };
  }
  bool placed(const std::string& key) {
    return tier_->peek(key, [](const CacheValue&) {});
  }

  Budget budget_{Device::kCuda, 100 * kMiB};
  std::atomic<int64_t> live_{0};
  std::unique_ptr<VramTier> tier_;
};

TEST_F(VramTierTest, CreateNeedsAVramBudget) {
  Budget ram(Device::kCpu, kMiB);
  VramTierOptions o;
  EXPECT_THAT(VramTier::create(o), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  o.vram_budget = &ram;
  EXPECT_THAT(VramTier::create(o), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST_F(VramTierTest, PlacingAThirdEvictsTheLeastRecentlyUsedToRam) {
  ASSERT_THAT(tier_->acquire("a", placer(40 * kMiB)), IsOk());
  ASSERT_THAT(tier_->acquire("b", placer(40 * kMiB)), IsOk());
  ASSERT_THAT(tier_->acquire("a", placer(40 * kMiB)), IsOk());  // a is now the most recent
  ASSERT_THAT(tier_->acquire("c", placer(40 * kMiB)), IsOk());
  EXPECT_TRUE(placed("a"));
  EXPECT_FALSE(placed("b"));
  EXPECT_TRUE(placed("c"));
  EXPECT_EQ(live_.load(), 80 * kMiB);
  EXPECT_EQ(budget_.snapshot().committed_bytes, 80 * kMiB);
  EXPECT_EQ(tier_->stats().evictions, 1);
}

TEST_F(VramTierTest, APinnedPlacementIsNeverEvicted) {
  absl::StatusOr<Pin> a = tier_->acquire("a", placer(60 * kMiB));
  ASSERT_THAT(a, IsOk());
  EXPECT_THAT(tier_->acquire("b", placer(60 * kMiB)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("cannot make room on cuda"), HasSubstr("needed 60.00 MiB"),
                             HasSubstr("available 40.00 MiB"), HasSubstr("evictable 0 bytes"))));
  a->reset();
  EXPECT_THAT(tier_->acquire("b", placer(60 * kMiB)), IsOk());
  EXPECT_FALSE(placed("a"));
}

TEST_F(VramTierTest, ActivationsAreReservedBesideAPlacement) {
  absl::StatusOr<Pin> a = tier_->acquire("a", placer(70 * kMiB));
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<Reservation> activations = tier_->make_room(30 * kMiB);
  ASSERT_THAT(activations, IsOk());
  EXPECT_THAT(tier_->make_room(1), StatusIs(absl::StatusCode::kResourceExhausted, ::testing::_));
  *activations = Reservation();
  EXPECT_EQ(budget_.snapshot().reserved_bytes, 0);
}

TEST_F(VramTierTest, DropFreesThePlacementAndAccountingReturnsToZero) {
  ASSERT_THAT(tier_->acquire("a", placer(10 * kMiB)), IsOk());
  EXPECT_THAT(tier_->drop("a"), IsOk());
  EXPECT_THAT(tier_->drop("a"), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  EXPECT_EQ(live_.load(), 0);
  EXPECT_EQ(budget_.snapshot().committed_bytes, 0);
}

// Threads place, pin, reserve activations and drop at random; the budget is
// never over-committed and everything returns to zero.
TEST_F(VramTierTest, ConcurrentPlacementsNeverOverCommit) {
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 300; ++i) {
        const std::string key = "m" + std::to_string(rng() % 5);
        switch (rng() % 4) {
          case 0:
          case 1: {
            absl::StatusOr<Pin> pin = tier_->acquire(key, placer((10 + rng() % 30) * kMiB));
            if (pin.ok()) {
              absl::StatusOr<Reservation> act = tier_->make_room((rng() % 20) * kMiB);
              (void)act;
            }
            break;
          }
          case 2:
            tier_->drop(key).IgnoreError();
            break;
          case 3:
            (void)tier_->stats();
            break;
        }
        const BudgetSnapshot s = budget_.snapshot();
        if (s.reserved_bytes + s.committed_bytes > s.capacity_bytes) over = true;
        if (live_.load() > s.capacity_bytes) over = true;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(over.load());
  for (int k = 0; k < 5; ++k) tier_->drop("m" + std::to_string(k)).IgnoreError();
  EXPECT_EQ(live_.load(), 0);
  EXPECT_EQ(budget_.snapshot().committed_bytes, 0);
  EXPECT_EQ(budget_.snapshot().reserved_bytes, 0);
  EXPECT_LE(budget_.snapshot().high_water_bytes, 100 * kMiB);
}

}  // namespace
}  // namespace diffusiond
