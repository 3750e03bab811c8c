// Engine cancellation inside a forward and in waiting unloads: a Denoise
// whose client gives up mid-step, or that cancel_all() stops, ends within
// one transformer block and frees its pin and job; a waiting unload wakes
// the moment its token fires or a lease expires on the (fake) clock.
#include <torch/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "core/engine/engine.h"
#include "core/util/cancellation.h"
#include "core/util/cancellation_scope.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/tiny_z_image.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::FakeClock;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;

// Several main layers, so a step has blocks to stop between.

// Spins (in real time, at most a minute) until `done` holds.
template <typename F>
bool spin_until(F done) {
  const absl::Time give_up = absl::Now() + absl::Minutes(1);
  while (!done()) {
    if (absl::Now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

class EngineCancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(6), models_dir_ + "/m", 1), IsOk());
    EngineOptions o;
    o.models_dir = models_dir_;
    o.clock = &clock_;
    ASSERT_THAT(::diffusiond::testing::start_engine(o, int64_t{4} << 30, &ram_, &engine_), IsOk());
    ModelLoadRequest load;
    load.path = "m";
    ASSERT_THAT(engine_->load(load), IsOk());
  }

  // A latent big enough that one block takes a while (4096 tokens).
  static EngineDenoiseRequest big_request(int steps) {
    EngineDenoiseRequest r;
    r.model = ModelHandle::by_id("m");
    r.latent_shape = {16, 128, 128};
    r.seed = 5;
    r.steps = steps;
    torch::manual_seed(2);
    r.positive.tensors["cap_feats"] = torch::randn({5, 32});
    return r;
  }

  struct Stopped {
    absl::Status status;
    int steps_done = 0;
    int64_t blocks_per_step = 0;
    int64_t blocks_after_stop = 0;  // checks begun after stop() ran
  };

  // Denoises on a worker thread, calls `stop` halfway through the second
  // step's blocks, and reports how far the work ran past it.
  Stopped stop_mid_step(DenoiseOptions options, const std::function<void()>& stop) {
    const int64_t start = cancellation_checks();
    std::atomic<int> steps{0};
    std::atomic<int64_t> after_first{-1};
    options.on_step = [&](const StepEvent& e) {
      if (e.step == 1) after_first = cancellation_checks();
      steps = e.step;
    };
    Stopped out;
    absl::StatusOr<torch::Tensor> result = absl::UnknownError("not run");
    std::thread worker([&] { result = engine_->denoise(big_request(3), options); });
    EXPECT_TRUE(spin_until([&] { return after_first.load() >= 0; }));
    out.blocks_per_step = after_first.load() - start;
    const int64_t halfway = after_first.load() + out.blocks_per_step / 2;
    EXPECT_TRUE(spin_until([&] { return cancellation_checks() >= halfway; }));
    const int64_t at_stop = cancellation_checks();
    stop();
    worker.join();
    out.blocks_after_stop = cancellation_checks() - at_stop;
    out.status = result.status();
    out.steps_done = steps.load();
    return out;
  }

  FakeClock clock_;
  TempDir dir_;
  std::string models_dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineCancelTest, AClientCancellingMidStepFreesTheSlotWithinOneBlock) {
  CancellationSource client;
  DenoiseOptions options;
  options.cancel = client.token();
  const Stopped s = stop_mid_step(options, [&] { client.cancel(absl::CancelledError("the client went away")); });
  EXPECT_THAT(s.status, StatusIs(absl::StatusCode::kCancelled, HasSubstr("the client went away")));
  EXPECT_EQ(s.steps_done, 1);  // the second step never finished
  EXPECT_GE(s.blocks_per_step, 8);  // two refiners and six layers
  // The block running at the cancel, then the check that threw.
  EXPECT_LE(s.blocks_after_stop, 2);
  EXPECT_TRUE(engine_->wait_idle(clock_.now()));  // the job is gone
  EXPECT_EQ(engine_->list()[0].pins, 0);          // and so is its pin
}

TEST_F(EngineCancelTest, CancelAllDuringAForwardStopsItWithinOneBlock) {
  const Stopped s = stop_mid_step(DenoiseOptions{}, [&] { engine_->cancel_all(); });
  EXPECT_THAT(s.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down")));
  EXPECT_EQ(s.steps_done, 1);
  EXPECT_LE(s.blocks_after_stop, 2);
  EXPECT_TRUE(engine_->wait_idle(clock_.now()));
  EXPECT_EQ(engine_->list()[0].pins, 0);
}

TEST_F(EngineCancelTest, AStepWithACancelledTokenRunsNoBlock) {
  CancellationSource client;
  client.cancel(absl::CancelledError("gave up in the queue"));
  const NamedTensors inputs = {{"x", torch::randn({1, 16, 1, 4, 4})},
                               {"t", torch::tensor({0.5f})},
                               {"cap_feats_0", torch::randn({5, 32})}};
  EXPECT_THAT(engine_->step("m", inputs, client.token()),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("gave up in the queue")));
  EXPECT_THAT(engine_->step("m", inputs), IsOk());  // another caller is not affected
  EXPECT_EQ(engine_->list()[0].pins, 0);
}

TEST_F(EngineCancelTest, AWaitingUnloadWakesWhenItsCallerGivesUp) {
  absl::StatusOr<LeaseId> lease = engine_->acquire_lease("m", absl::Hours(1));
  ASSERT_THAT(lease, IsOk());
  CancellationSource client;
  UnloadOptions options;
  options.cancel = client.token();
  absl::StatusOr<UnloadResult> r = absl::UnknownError("not run");
  std::thread waiter([&] { r = engine_->unload("m", options); });
  ASSERT_TRUE(clock_.await_waiters(1));
  client.cancel(absl::CancelledError("the client went away"));
  waiter.join();  // no time passed: the token woke it
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kCancelled, HasSubstr("stays loaded")));
  EXPECT_EQ(engine_->list().size(), 1u);
  EXPECT_THAT(engine_->release_lease(*lease), IsOk());
}

TEST_F(EngineCancelTest, CancelAllWakesAWaitingUnload) {
  ASSERT_THAT(engine_->acquire_lease("m", absl::Hours(1)), IsOk());
  absl::StatusOr<UnloadResult> r = absl::UnknownError("not run");
  std::thread waiter([&] { r = engine_->unload("m", UnloadOptions{}); });
  ASSERT_TRUE(clock_.await_waiters(1));
  engine_->cancel_all();
  waiter.join();
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down")));
  EXPECT_EQ(engine_->list().size(), 1u);
}

TEST_F(EngineCancelTest, AWaitingUnloadEndsWhenTheLeaseExpiresOnTheClock) {
  ASSERT_THAT(engine_->acquire_lease("m", absl::Seconds(30)), IsOk());
  absl::StatusOr<UnloadResult> r = absl::UnknownError("not run");
  std::thread waiter([&] { r = engine_->unload("m", UnloadOptions{}); });
  ASSERT_TRUE(clock_.await_waiters(1));
  clock_.advance(absl::Seconds(29));
  ASSERT_TRUE(clock_.await_waiters(1));  // not yet: it waits on
  clock_.advance(absl::Seconds(1));
  waiter.join();
  ASSERT_THAT(r, IsOk());
  EXPECT_GT(r->freed_bytes[kCpuIndex], 0);
  EXPECT_TRUE(engine_->list().empty());
}

TEST_F(EngineCancelTest, AnUnloadTimeoutRunsOnTheClock) {
  ASSERT_THAT(engine_->acquire_lease("m", absl::Hours(1)), IsOk());
  UnloadOptions options;
  options.timeout = absl::Minutes(5);
  absl::StatusOr<UnloadResult> r = absl::UnknownError("not run");
  std::thread waiter([&] { r = engine_->unload("m", options); });
  ASSERT_TRUE(clock_.await_waiters(1));
  clock_.advance(absl::Minutes(5));
  waiter.join();
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("still in use after 5m")));
  EXPECT_EQ(engine_->list().size(), 1u);
}

}  // namespace
}  // namespace diffusiond
