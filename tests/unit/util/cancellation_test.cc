// CancellationSource/Token: reasons, links, callbacks, waits on a fake
// clock, and stopping code between blocks through a CancellationScope.
#include "core/util/cancellation.h"

#include <thread>
#include <vector>

#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::FakeClock;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

TEST(Cancellation, ADefaultTokenNeverFires) {
  const CancellationToken never;
  EXPECT_FALSE(never.cancelled());
  EXPECT_THAT(never.status(), IsOk());
  bool ran = false;
  const CancellationCallback callback = never.on_cancel([&] { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(Cancellation, TheFirstReasonWins) {
  CancellationSource source;
  const CancellationToken token = source.token();
  EXPECT_FALSE(token.cancelled());
  source.cancel(absl::UnavailableError("draining"));
  source.cancel(absl::CancelledError("later"));
  EXPECT_TRUE(token.cancelled());
  EXPECT_THAT(token.status(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("draining")));
  CancellationSource plain;
  plain.cancel(absl::OkStatus());  // an OK reason is still a cancellation
  EXPECT_THAT(plain.token().status(), StatusIs(absl::StatusCode::kCancelled, ::testing::_));
}

TEST(Cancellation, TokensOutliveTheirSource) {
  CancellationToken token;
  {
    CancellationSource source;
    token = source.token();
    source.cancel(absl::CancelledError("gone"));
  }
  EXPECT_THAT(token.status(), StatusIs(absl::StatusCode::kCancelled, HasSubstr("gone")));
}

TEST(Cancellation, CallbacksRunOnceAndStopWithTheirSubscription) {
  CancellationSource source;
  int kept = 0, dropped = 0;
  CancellationCallback keep = source.token().on_cancel([&] { ++kept; });
  CancellationCallback drop = source.token().on_cancel([&] { ++dropped; });
  drop.reset();
  source.cancel();
  source.cancel();
  EXPECT_EQ(kept, 1);
  EXPECT_EQ(dropped, 0);
  // Subscribing to a cancelled token runs the callback at once.
  int late = 0;
  const CancellationCallback now = source.token().on_cancel([&] { ++late; });
  EXPECT_EQ(late, 1);
}

TEST(Cancellation, ALinkedSourceFiresWithItsParentsReason) {
  CancellationSource client, drain;
  CancellationSource job({client.token(), drain.token()});
  EXPECT_FALSE(job.cancelled());
  drain.cancel(absl::UnavailableError("shutting down"));
  EXPECT_THAT(job.token().status(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down")));
  client.cancel(absl::CancelledError("client"));  // too late to change the reason
  EXPECT_THAT(job.token().status(), StatusIs(absl::StatusCode::kUnavailable, ::testing::_));

  // Linked to a parent that already fired: cancelled from the start.
  CancellationSource after({drain.token()});
  EXPECT_TRUE(after.cancelled());
  // Cancelling the child never reaches the parent.
  CancellationSource parent;
  CancellationSource child({parent.token()});
  child.cancel();
  EXPECT_FALSE(parent.cancelled());
}

TEST(Cancellation, ADestroyedLinkNoLongerFires) {
  CancellationSource parent;
  CancellationToken orphan;
  {
    CancellationSource child({parent.token()});
    orphan = child.token();
  }
  parent.cancel();
  EXPECT_FALSE(orphan.cancelled());
}

TEST(Cancellation, AWaitEndsAtTheDeadlineOnTheClock) {
  FakeClock clock;
  CancellationSource source;
  bool cancelled = true;
  std::thread waiter([&] { cancelled = source.token().wait_until(&clock, clock.now() + absl::Seconds(10)); });
  ASSERT_TRUE(clock.await_waiters(1));
  clock.advance(absl::Seconds(10));
  waiter.join();
  EXPECT_FALSE(cancelled);
}

TEST(Cancellation, AWaitWakesAtOnceWhenCancelled) {
  FakeClock clock;
  CancellationSource source;
  bool cancelled = false;
  std::thread waiter([&] { cancelled = source.token().wait_until(&clock, absl::InfiniteFuture()); });
  ASSERT_TRUE(clock.await_waiters(1));
  source.cancel();
  waiter.join();  // time never moved
  EXPECT_TRUE(cancelled);
}

TEST(Cancellation, ConcurrentCancelsRunEachCallbackOnce) {
  for (int round = 0; round < 20; ++round) {
    CancellationSource source;
    std::atomic<int> runs{0};
    const CancellationCallback callback = source.token().on_cancel([&] { ++runs; });
    std::vector<std::thread> cancellers;
    for (int i = 0; i < 4; ++i) cancellers.emplace_back([&] { source.cancel(); });
    for (std::thread& t : cancellers) t.join();
    EXPECT_EQ(runs.load(), 1);
  }
}

TEST(CancellationScope, CheckThrowsOnlyInsideACancelledScope) {
  EXPECT_NO_THROW(check_cancelled());  // no scope: nothing to stop
  CancellationSource source;
  {
    CancellationScope scope(source.token());
    EXPECT_NO_THROW(check_cancelled());
    source.cancel(absl::UnavailableError("draining"));
    EXPECT_THROW(check_cancelled(), OperationCancelled);
    {
      const CancellationScope inner{CancellationToken()};
      EXPECT_NO_THROW(check_cancelled());  // the inner scope's token rules
    }
    EXPECT_THROW(check_cancelled(), OperationCancelled);
  }
  EXPECT_NO_THROW(check_cancelled());  // the scope restored "none"
}

TEST(CancellationScope, StatusOfTurnsTheThrowIntoTheReason) {
  CancellationSource source;
  source.cancel(absl::CancelledError("the client gave up"));
  CancellationScope scope(source.token());
  const int64_t before = cancellation_checks();
  int blocks = 0;
  const absl::Status s = status_of("the forward", [&]() -> absl::Status {
    for (int i = 0; i < 10; ++i) {
      check_cancelled();
      ++blocks;
    }
    return absl::OkStatus();
  });
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kCancelled, HasSubstr("the client gave up")));
  EXPECT_EQ(blocks, 0);
  EXPECT_GE(cancellation_checks() - before, 1);
}

}  // namespace
}  // namespace diffusiond
