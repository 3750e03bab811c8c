// WorkQueue: every accepted task runs, at most `threads` at once, a full
// queue refuses at once naming itself, and destruction drains what it took.
// Torch-free; CI also runs it under ThreadSanitizer.
#include "core/util/work_queue.h"

#include <atomic>
#include <memory>

#include "core/util/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Tasks that block until opened, and count how many started, how many run
// at the same time, and how many finished.
class Gate {
 public:
  std::function<void()> task() {
    return [this] {
      MutexLock lock(&mu_);
      ++started_;
      ++running_;
      if (running_ > max_running_) max_running_ = running_;
      changed_.signal_all();
      while (!open_) changed_.wait(&mu_);
      --running_;
      ++finished_;
      changed_.signal_all();
    };
  }
  void open() {
    MutexLock lock(&mu_);
    open_ = true;
    changed_.signal_all();
  }
  void wait_started(int n) {
    MutexLock lock(&mu_);
    while (started_ < n) changed_.wait(&mu_);
  }
  void wait_finished(int n) {
    MutexLock lock(&mu_);
    while (finished_ < n) changed_.wait(&mu_);
  }
  int started() {
    MutexLock lock(&mu_);
    return started_;
  }
  int finished() {
    MutexLock lock(&mu_);
    return finished_;
  }
  int max_running() {
    MutexLock lock(&mu_);
    return max_running_;
  }

 private:
  Mutex mu_;
  CondVar changed_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  int started_ ABSL_GUARDED_BY(mu_) = 0;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int max_running_ ABSL_GUARDED_BY(mu_) = 0;
  int finished_ ABSL_GUARDED_BY(mu_) = 0;
};

// Opens the gate when the test leaves, even by a failed ASSERT, so that the
// queue (declared before it) can drain instead of hanging.
struct OpenOnExit {
  Gate* gate;
  ~OpenOnExit() { gate->open(); }
};

TEST(WorkQueue, RunsEveryAcceptedTask) {
  std::atomic<int> ran{0};
  {
    WorkQueue queue("test", 3, 100);
    for (int i = 0; i < 100; ++i) {
      ASSERT_THAT(queue.submit([&ran] { ran.fetch_add(1); }), IsOk());
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(WorkQueue, RunsAtMostThreadsTasksAtOnce) {
  Gate gate;
  WorkQueue queue("test", 3, 10);
  OpenOnExit opener{&gate};
  for (int i = 0; i < 10; ++i) ASSERT_THAT(queue.submit(gate.task()), IsOk());
  gate.wait_started(3);
  EXPECT_EQ(queue.running(), 3);
  EXPECT_EQ(queue.queued(), 7);
  EXPECT_EQ(gate.started(), 3);
  gate.open();
  gate.wait_finished(10);
  EXPECT_EQ(gate.max_running(), 3);
}

TEST(WorkQueue, FullQueueRefusesNamingItself) {
  Gate gate;
  WorkQueue queue("uploads", 2, 3);
  OpenOnExit opener{&gate};
  ASSERT_THAT(queue.submit(gate.task()), IsOk());
  ASSERT_THAT(queue.submit(gate.task()), IsOk());
  gate.wait_started(2);  // every worker is busy
  for (int i = 0; i < 3; ++i) ASSERT_THAT(queue.submit(gate.task()), IsOk());
  EXPECT_EQ(queue.queued(), 3);

  bool ran = false;
  EXPECT_THAT(queue.submit([&ran] { ran = true; }),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("uploads queue is full"), HasSubstr("2 running"), HasSubstr("3 waiting"))));
  EXPECT_EQ(queue.queued(), 3);  // the refused task was not queued

  gate.open();
  gate.wait_finished(5);
  // Room again once the queue drains.
  EXPECT_THAT(queue.submit(gate.task()), IsOk());
  gate.wait_finished(6);
  EXPECT_FALSE(ran);
}

TEST(WorkQueue, IdleWorkersCountAsRoom) {
  Gate gate;
  WorkQueue queue("test", 2, 0);
  OpenOnExit opener{&gate};
  // No waiting room, but two idle workers take two tasks.
  ASSERT_THAT(queue.submit(gate.task()), IsOk());
  ASSERT_THAT(queue.submit(gate.task()), IsOk());
  gate.wait_started(2);
  EXPECT_THAT(queue.submit(gate.task()), StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("test")));
  gate.open();
  gate.wait_finished(2);
  EXPECT_EQ(gate.started(), 2);
}

TEST(WorkQueue, DestructionFinishesAcceptedTasks) {
  Gate gate;
  std::atomic<int> ran{0};
  auto queue = std::make_unique<WorkQueue>("test", 1, 5);
  OpenOnExit opener{&gate};
  ASSERT_THAT(queue->submit(gate.task()), IsOk());
  gate.wait_started(1);
  for (int i = 0; i < 5; ++i) ASSERT_THAT(queue->submit([&ran] { ran.fetch_add(1); }), IsOk());
  EXPECT_EQ(queue->queued(), 5);
  gate.open();
  queue.reset();  // joins after the queued tasks ran
  EXPECT_EQ(gate.finished(), 1);
  EXPECT_EQ(ran.load(), 5);
}

}  // namespace
}  // namespace diffusiond
