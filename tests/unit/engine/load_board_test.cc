// LoadBoard: progress fan-out, late joiners, cancellation by consensus and
// by drain, and records that go when their last caller leaves.
#include "core/engine/load_board.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

LoadProgress progress(int64_t tensors_done) { return LoadProgress{tensors_done * 10, 100, tensors_done, 10, {}}; }

// Records what one caller saw; give_up() cancels its token.
struct Caller {
  std::vector<int64_t> seen;  // tensors_done of each event
  CancellationSource cancel;

  LoadBoard::Watcher watcher() {
    return LoadBoard::Watcher{[this](const LoadProgress& p) { seen.push_back(p.tensors_done); }, cancel.token()};
  }
  void give_up() { cancel.cancel(); }
};

bool cancelled(const LoadBoard::Ticket& t) { return t.load().token().cancelled(); }

TEST(LoadBoard, PublishFansOutToEveryWatcher) {
  LoadBoard board;
  Caller a, b, c;
  LoadBoard::Ticket ta = board.join("m", a.watcher());
  LoadBoard::Ticket tb = board.join("m", b.watcher());
  LoadBoard::Ticket tc = board.join("m", c.watcher());
  EXPECT_EQ(&ta.load(), &tb.load());
  EXPECT_EQ(&ta.load(), &tc.load());
  ta.load().publish(progress(1));
  tb.load().publish(progress(2));
  EXPECT_THAT(a.seen, ElementsAre(1, 2));
  EXPECT_THAT(b.seen, ElementsAre(1, 2));
  EXPECT_THAT(c.seen, ElementsAre(1, 2));
}

TEST(LoadBoard, KeysAreSeparateLoads) {
  LoadBoard board;
  Caller a, b;
  LoadBoard::Ticket ta = board.join("a", a.watcher());
  LoadBoard::Ticket tb = board.join("b", b.watcher());
  EXPECT_NE(&ta.load(), &tb.load());
  ta.load().publish(progress(1));
  EXPECT_THAT(a.seen, ElementsAre(1));
  EXPECT_THAT(b.seen, IsEmpty());
}

TEST(LoadBoard, LateJoinerFirstGetsTheLastProgress) {
  LoadBoard board;
  Caller early, late;
  LoadBoard::Ticket te = board.join("m", early.watcher());
  te.load().publish(progress(1));
  te.load().publish(progress(4));
  LoadBoard::Ticket tl = board.join("m", late.watcher());
  EXPECT_THAT(late.seen, ElementsAre(4));
  te.load().publish(progress(5));
  EXPECT_THAT(late.seen, ElementsAre(4, 5));
  EXPECT_THAT(early.seen, ElementsAre(1, 4, 5));
}

TEST(LoadBoard, JoinerBeforeAnyProgressGetsNothingYet) {
  LoadBoard board;
  Caller a, b;
  LoadBoard::Ticket ta = board.join("m", a.watcher());
  LoadBoard::Ticket tb = board.join("m", b.watcher());
  EXPECT_THAT(b.seen, IsEmpty());
}

TEST(LoadBoard, WatchersMayLeaveOutCallbacks) {
  LoadBoard board;
  Caller a;
  LoadBoard::Ticket silent = board.join("m", LoadBoard::Watcher{});
  LoadBoard::Ticket ta = board.join("m", a.watcher());
  a.give_up();
  ta.load().publish(progress(1));
  EXPECT_THAT(a.seen, ElementsAre(1));
  // A watcher without a token never gives up, so the load goes on.
  EXPECT_FALSE(cancelled(ta));
}

TEST(LoadBoard, CancelledOnlyWhenEveryWatcherGaveUp) {
  LoadBoard board;
  Caller a, b;
  LoadBoard::Ticket ta = board.join("m", a.watcher());
  LoadBoard::Ticket tb = board.join("m", b.watcher());
  a.give_up();
  ta.load().publish(progress(1));
  EXPECT_FALSE(cancelled(ta));
  b.give_up();
  ta.load().publish(progress(2));
  EXPECT_TRUE(cancelled(ta));
  EXPECT_TRUE(cancelled(tb));
  // Giving up does not stop the events.
  EXPECT_THAT(b.seen, ElementsAre(1, 2));
  // A newcomer gets a live load even while the cancelled one's callers are
  // still on the board.
  Caller c;
  LoadBoard::Ticket tc = board.join("m", c.watcher());
  EXPECT_NE(&tc.load(), &ta.load());
  EXPECT_FALSE(cancelled(tc));
}

TEST(LoadBoard, LeavingStopsEventsAndTheLeaverNoLongerVotes) {
  LoadBoard board;
  Caller stays, leaves;
  stays.give_up();
  LoadBoard::Ticket ts = board.join("m", stays.watcher());
  {
    LoadBoard::Ticket tl = board.join("m", leaves.watcher());
    ts.load().publish(progress(1));
    EXPECT_FALSE(cancelled(ts));  // `leaves` still waits
  }
  ts.load().publish(progress(2));
  EXPECT_THAT(leaves.seen, ElementsAre(1));
  EXPECT_THAT(stays.seen, ElementsAre(1, 2));
  EXPECT_TRUE(cancelled(ts));  // the only one left gave up
}

TEST(LoadBoard, LastLeaverRemovesTheRecord) {
  LoadBoard board;
  Caller first, second;
  first.give_up();
  {
    LoadBoard::Ticket t = board.join("m", first.watcher());
    t.load().publish(progress(3));
    ASSERT_TRUE(cancelled(t));
  }
  // A fresh record: no stale progress, not cancelled by the old callers.
  LoadBoard::Ticket t = board.join("m", second.watcher());
  EXPECT_THAT(second.seen, IsEmpty());
  EXPECT_FALSE(cancelled(t));
}

TEST(LoadBoard, RecordStaysWhileAnyoneWaits) {
  LoadBoard board;
  Caller a, b, c;
  auto ta = std::make_unique<LoadBoard::Ticket>(board.join("m", a.watcher()));
  LoadBoard::Ticket tb = board.join("m", b.watcher());
  ta->load().publish(progress(2));
  ta.reset();
  LoadBoard::Ticket tc = board.join("m", c.watcher());
  EXPECT_EQ(&tb.load(), &tc.load());
  EXPECT_THAT(c.seen, ElementsAre(2));
}

TEST(LoadBoard, MovedTicketLeavesOnce) {
  LoadBoard board;
  Caller a, b;
  LoadBoard::Ticket tb = board.join("m", b.watcher());
  {
    LoadBoard::Ticket first = board.join("m", a.watcher());
    LoadBoard::Ticket moved(std::move(first));
    moved.load().publish(progress(1));
  }
  tb.load().publish(progress(2));
  EXPECT_THAT(a.seen, ElementsAre(1));
  EXPECT_THAT(b.seen, ElementsAre(1, 2));
}

TEST(LoadBoard, CancelAllCancelsCurrentAndLaterLoads) {
  LoadBoard board;
  Caller a, b;
  LoadBoard::Ticket current = board.join("current", a.watcher());
  EXPECT_FALSE(cancelled(current));
  board.cancel_all(absl::UnavailableError("draining"));
  // At once, without waiting for a publish or for the watchers to give up.
  EXPECT_TRUE(cancelled(current));
  LoadBoard::Ticket later = board.join("later", b.watcher());
  EXPECT_TRUE(cancelled(later));
}

}  // namespace
}  // namespace diffusiond
