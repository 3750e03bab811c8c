// EngineOptions::load_timeout: a load that runs past it is cancelled for
// every caller with DEADLINE_EXCEEDED naming the model and the timeout, and
// gives its reservation back. The checkpoint's reads are slowed on a fake
// clock through EngineOptions::file_opener, so nothing sleeps.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "core/checkpoint/random_access_file.h"
#include "core/engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_z_image.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::FakeClock;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A file whose every read takes `*per_read` on `clock`: slow storage.
class SlowFile final : public RandomAccessFile {
 public:
  SlowFile(std::unique_ptr<RandomAccessFile> inner, FakeClock* clock, const std::atomic<int64_t>* per_read_ms)
      : inner_(std::move(inner)), clock_(clock), per_read_ms_(per_read_ms) {}
  const std::string& path() const override { return inner_->path(); }
  int64_t size() const override { return inner_->size(); }
  absl::Status read_at(int64_t offset, int64_t n, char* dst) const override {
    clock_->advance(absl::Milliseconds(per_read_ms_->load()));
    return inner_->read_at(offset, n, dst);
  }

 private:
  std::unique_ptr<RandomAccessFile> inner_;
  FakeClock* clock_;
  const std::atomic<int64_t>* per_read_ms_;
};

class EngineLoadTimeoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(2), models_dir_ + "/m", 1), IsOk());
    ram_ = std::make_unique<Budget>(Device::kCpu, int64_t{1} << 30);
  }

  // An engine whose checkpoint reads take per_read_ms_ each, and which
  // advances the clock by open_ms_ at every file it opens.
  std::unique_ptr<Engine> make_engine(absl::Duration load_timeout) {
    EngineOptions o;
    o.models_dir = models_dir_;
    o.ram_budget = ram_.get();
    o.clock = &clock_;
    o.load_timeout = load_timeout;
    o.file_opener = [this](absl::string_view path) -> absl::StatusOr<std::unique_ptr<RandomAccessFile>> {
      clock_.advance(absl::Milliseconds(open_ms_.load()));
      absl::StatusOr<std::unique_ptr<RandomAccessFile>> f = open_random_access_file(path);
      if (!f.ok()) return f.status();
      ++opened_;
      return std::unique_ptr<RandomAccessFile>(new SlowFile(std::move(*f), &clock_, &per_read_ms_));
    };
    absl::StatusOr<std::unique_ptr<Engine>> e = Engine::create(o);
    EXPECT_THAT(e, IsOk());
    return std::move(*e);
  }

  static ModelLoadRequest request() {
    ModelLoadRequest r;
    r.path = "m";
    return r;
  }

  void expect_nothing_held(const Engine& engine) {
    const BudgetSnapshot b = ram_->snapshot();
    EXPECT_EQ(b.reserved_bytes, 0);
    EXPECT_EQ(b.committed_bytes, 0);
    EXPECT_TRUE(engine.list().empty());
  }

  FakeClock clock_;
  TempDir dir_;
  std::string models_dir_;
  std::unique_ptr<Budget> ram_;
  std::atomic<int64_t> per_read_ms_{1000};
  std::atomic<int64_t> open_ms_{0};
  std::atomic<int> opened_{0};
};

TEST_F(EngineLoadTimeoutTest, ALoadPastItsTimeoutStopsBeforeItsNextTensorAndFreesItsReservation) {
  std::unique_ptr<Engine> engine = make_engine(absl::Seconds(10));
  int64_t reserved_during = 0;
  LoadWatcher watcher;
  watcher.on_progress = [&](const LoadProgress&) {
    reserved_during = std::max(reserved_during, ram_->snapshot().reserved_bytes);
  };
  const absl::Time start = clock_.now();
  absl::StatusOr<ModelInfo> info = engine->load(request(), watcher);
  EXPECT_THAT(info, StatusIs(absl::StatusCode::kDeadlineExceeded,
                             AllOf(HasSubstr("model \"m\" did not load within the load timeout (10s)"),
                                   HasSubstr("cancelled after"))));
  // Stopped at the first tensor boundary past the deadline: one read late
  // at most (each read is a second here).
  EXPECT_GE(clock_.now() - start, absl::Seconds(10));
  EXPECT_LE(clock_.now() - start, absl::Seconds(11));
  EXPECT_GT(reserved_during, 0);  // it had been admitted
  expect_nothing_held(*engine);
}

TEST_F(EngineLoadTimeoutTest, TheSameSlowLoadWithoutATimeoutCompletes) {
  std::unique_ptr<Engine> engine = make_engine(absl::InfiniteDuration());
  const absl::Time start = clock_.now();
  EXPECT_THAT(engine->load(request()), IsOk());
  // It did run past the 10 s of the test above.
  EXPECT_GT(clock_.now() - start, absl::Seconds(10));
}

TEST_F(EngineLoadTimeoutTest, ATimeoutSpentOpeningTheCheckpointStopsItBeforeAnyReservation) {
  std::unique_ptr<Engine> engine = make_engine(absl::Seconds(10));
  open_ms_ = 11000;  // an open that hangs for 11 s, then returns
  per_read_ms_ = 0;
  int64_t reserved_during = 0;
  LoadWatcher watcher;
  watcher.on_progress = [&](const LoadProgress&) { reserved_during = ram_->snapshot().reserved_bytes; };
  EXPECT_THAT(engine->load(request(), watcher),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("model \"m\" did not load within the load timeout (10s)"),
                             Not(HasSubstr("tensors")))));
  EXPECT_EQ(opened_.load(), 1);
  EXPECT_EQ(reserved_during, 0);  // no progress: it never streamed
  expect_nothing_held(*engine);
}

TEST_F(EngineLoadTimeoutTest, AFailedLoadDoesNotStopTheNextOneWhichHasItsOwnDeadline) {
  std::unique_ptr<Engine> engine = make_engine(absl::Seconds(10));
  ASSERT_THAT(engine->load(request()), StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("load timeout")));
  // Storage recovers: 10 ms a read. The clock already stands past the first
  // load's deadline; the second is timed from its own start.
  per_read_ms_ = 10;
  absl::StatusOr<ModelInfo> info = engine->load(request());
  ASSERT_THAT(info, IsOk());
  EXPECT_EQ(info->model_id, "m");
  EXPECT_EQ(ram_->snapshot().reserved_bytes, 0);
  EXPECT_GT(ram_->snapshot().committed_bytes, 0);
}

}  // namespace
}  // namespace diffusiond
