// Faults while the Engine loads a checkpoint: I/O errors at the first, a
// middle and the last tensor, short reads, a failing device, the real file
// truncated or replaced mid-load, and files the daemon may not open. Faults
// come through EngineOptions::file_opener (tests/testing/faulty_file.h), so
// the whole load path runs: resolution, the cache's claim, planning, the
// reservation, streaming.
//
// Every failure must be a status naming the file (and the tensor, once a
// tensor was being read), leave the RAM budget with nothing reserved or
// committed and the cache empty, and a load once the fault is gone must
// succeed.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/checkpoint/checkpoint.h"
#include "core/engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/faulty_file.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_z_image.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

namespace fs = std::filesystem;

using ::diffusiond::testing::ends_at;
using ::diffusiond::testing::failing_device_from;
using ::diffusiond::testing::faulty_opener;
using ::diffusiond::testing::io_error_at;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::short_reads;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kWeights[] = "diffusion_pytorch_model.safetensors";

class EngineFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(1), models_dir_ + "/tiny", 1),
                IsOk());
    weights_ = fs::canonical(models_dir_ + "/tiny/" + kWeights).string();
    absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(weights_);
    ASSERT_THAT(c, IsOk());
    tensors_ = (*c)->tensors();  // in file order, which is read order
    ASSERT_GE(tensors_.size(), 3u);

    EngineOptions o;
    o.models_dir = models_dir_;
    // The fault of the moment; loads run on the test's thread.
    o.file_opener = [this](absl::string_view path) {
      return opener_ ? opener_(path) : open_random_access_file(path);
    };
    ASSERT_THAT(::diffusiond::testing::start_engine(o, int64_t{1} << 30, &ram_, &engine_), IsOk());
  }

  static ModelLoadRequest request(const std::string& path = "tiny", const std::string& id = "") {
    ModelLoadRequest r;
    r.path = path;
    r.model_id = id;
    return r;
  }

  BudgetSnapshot ram() const { return ram_->snapshot(); }

  // The message of a failed read of tensor `t` of the weights file.
  ::testing::Matcher<std::string> names_the_read(const TensorRecord& t) const {
    return AllOf(HasSubstr(weights_ + ": "), HasSubstr("tensor '" + t.name + "'"));
  }

  // Expects the cache, the budget and the engine's list to hold nothing, and
  // the failed load to have been the cache's (its claim was made).
  void expect_nothing_held() {
    EXPECT_EQ(ram().reserved_bytes, 0);
    EXPECT_EQ(ram().committed_bytes, 0);
    EXPECT_THAT(engine_->list(), IsEmpty());
    EXPECT_THAT(engine_->stats().entries, IsEmpty());
    EXPECT_EQ(engine_->stats().failed_loads, 1);
  }

  // Removes the fault and loads again: the load succeeds and holds exactly
  // its bytes.
  void expect_a_load_without_the_fault_succeeds() {
    opener_ = nullptr;
    absl::StatusOr<ModelInfo> info = engine_->load(request());
    ASSERT_THAT(info, IsOk());
    EXPECT_EQ(ram().committed_bytes, info->bytes[kCpuIndex]);
    EXPECT_EQ(ram().reserved_bytes, 0);
  }

  // One Step of `model_id` on fixed inputs.
  torch::Tensor step(const std::string& model_id) {
    torch::manual_seed(3);
    const NamedTensors inputs = {{"x", torch::randn({1, 16, 1, 4, 4})},
                                 {"t", torch::tensor({0.5f})},
                                 {"cap_feats_0", torch::randn({5, 32})}};
    absl::StatusOr<NamedTensors> out = engine_->step(model_id, inputs);
    EXPECT_THAT(out, IsOk());
    return out.ok() ? out->at("out") : torch::Tensor();
  }

  // Teardown order: the engine (and its cache) before the budget.
  TempDir dir_;
  std::string models_dir_;
  std::string weights_;  // canonical: the path the engine opens
  std::vector<TensorRecord> tensors_;
  FileOpener opener_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

// EIO on each of the first, a middle and the last tensor's data.
class EngineIoErrorTest : public EngineFaultTest, public ::testing::WithParamInterface<const char*> {
 protected:
  const TensorRecord& target() const {
    const std::string which = GetParam();
    if (which == "first") return tensors_.front();
    if (which == "middle") return tensors_[tensors_.size() / 2];
    return tensors_.back();
  }
};

TEST_P(EngineIoErrorTest, FailsNamingTheFileAndTensorAndHoldsNothing) {
  const TensorRecord& t = target();
  opener_ = faulty_opener({io_error_at(t.file_offset, t.file_offset + t.nbytes)});
  EXPECT_THAT(engine_->load(request()),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(names_the_read(t), HasSubstr("read at offset " + std::to_string(t.file_offset)),
                             HasSubstr("Input/output error"))));
  EXPECT_GT(ram().high_water_bytes, 0);  // the load was admitted before it failed
  expect_nothing_held();
  expect_a_load_without_the_fault_succeeds();
}

INSTANTIATE_TEST_SUITE_P(Tensors, EngineIoErrorTest, ::testing::Values("first", "middle", "last"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

TEST_F(EngineFaultTest, ShortReadsAreRetriedAndLoadTheSameWeights) {
  // A pread that returns 7 bytes at a time, header included (a slow network
  // filesystem may do that): the read loop keeps asking.
  opener_ = faulty_opener({short_reads(0, std::numeric_limits<int64_t>::max(), 7)});
  ASSERT_THAT(engine_->load(request("tiny", "short")), IsOk());
  opener_ = nullptr;
  ASSERT_THAT(engine_->load(request("tiny", "plain")), IsOk());
  EXPECT_TRUE(torch::equal(step("short"), step("plain")));
}

TEST_F(EngineFaultTest, AShortReadThenTheEndIsDataLossNamingTheTensor) {
  const TensorRecord& t = tensors_[tensors_.size() / 2];
  const int64_t end = t.file_offset + t.nbytes / 2;
  opener_ = faulty_opener({ends_at(end)});
  EXPECT_THAT(engine_->load(request()),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(names_the_read(t), HasSubstr("file ends at offset " + std::to_string(end)),
                             HasSubstr("truncated while being read"))));
  expect_nothing_held();
  expect_a_load_without_the_fault_succeeds();
}

TEST_F(EngineFaultTest, ADeviceOutOfSpaceFailsTheFirstTensor) {
  opener_ = faulty_opener({failing_device_from(tensors_.front().file_offset, ENOSPC)});
  EXPECT_THAT(engine_->load(request()),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(names_the_read(tensors_.front()), HasSubstr("No space left on device"))));
  expect_nothing_held();
  expect_a_load_without_the_fault_succeeds();
}

TEST_F(EngineFaultTest, ADeviceThatFailsEveryReadFailsAtTheHeader) {
  // Before any tensor: the message names the file and the header's offset.
  opener_ = faulty_opener({failing_device_from(0, EIO)});
  EXPECT_THAT(engine_->load(request()),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(weights_ + ": read at offset 0: Input/output error"),
                             Not(HasSubstr("reading tensor")))));
  EXPECT_EQ(ram().high_water_bytes, 0);  // nothing was admitted
  expect_nothing_held();
  expect_a_load_without_the_fault_succeeds();
}

TEST_F(EngineFaultTest, AFileTruncatedWhileItLoadsIsDataLossNamingTheTensor) {
  // The real file loses its tail when the loader reaches the middle tensor:
  // pread then comes up short and the loader reports it. (A reader that
  // mapped the file would take a SIGBUS here.)
  const std::string pristine = dir_.path("pristine.safetensors");
  fs::copy_file(weights_, pristine);
  const TensorRecord& t = tensors_[tensors_.size() / 2];
  bool truncated = false;
  opener_ = faulty_opener({}, [&](int64_t offset, int64_t) {
    if (truncated || offset < t.file_offset) return;
    truncated = true;
    ASSERT_EQ(::truncate(weights_.c_str(), t.file_offset + 1), 0);
  });
  EXPECT_THAT(engine_->load(request()),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(names_the_read(t), HasSubstr("file ends at offset " + std::to_string(t.file_offset + 1)),
                             HasSubstr("truncated while being read"))));
  EXPECT_TRUE(truncated);
  expect_nothing_held();
  fs::copy_file(pristine, weights_, fs::copy_options::overwrite_existing);
  expect_a_load_without_the_fault_succeeds();
}

TEST_F(EngineFaultTest, AFileReplacedWhileItLoadsLoadsTheFileThatWasOpened) {
  // Another model is renamed over the weights once their data is being
  // read. The open descriptor keeps the old inode, so the load completes
  // with the weights that were opened, all of them: the same as a copy of
  // the original. A later load of the path gets the new file.
  fs::create_directories(models_dir_ + "/copy");
  fs::copy_file(models_dir_ + "/tiny/config.json", models_dir_ + "/copy/config.json");
  fs::copy_file(weights_, models_dir_ + "/copy/" + kWeights);
  ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(1), dir_.path("other"), 2), IsOk());
  const std::string replacement = dir_.path(std::string("other/") + kWeights);
  bool replaced = false;
  opener_ = faulty_opener({}, [&](int64_t offset, int64_t) {
    if (replaced || offset < tensors_.front().file_offset) return;
    replaced = true;
    ASSERT_EQ(std::rename(replacement.c_str(), weights_.c_str()), 0);
  });
  ASSERT_THAT(engine_->load(request("tiny", "during")), IsOk());
  EXPECT_TRUE(replaced);
  opener_ = nullptr;
  ASSERT_THAT(engine_->load(request("copy", "original")), IsOk());
  ASSERT_THAT(engine_->load(request("tiny", "after")), IsOk());
  const torch::Tensor during = step("during");
  EXPECT_TRUE(torch::equal(during, step("original")));
  EXPECT_FALSE(torch::equal(during, step("after")));
}

TEST_F(EngineFaultTest, AFileThatMayNotBeOpenedIsPermissionDeniedNamingIt) {
  // What open_random_access_file answers for EACCES — a models directory
  // made unreadable under a running daemon. Injected, since chmod does not
  // stop root (see ...ByModeBits below).
  opener_ = [](absl::string_view path) -> absl::StatusOr<std::unique_ptr<RandomAccessFile>> {
    return absl::PermissionDeniedError(absl::StrCat(path, ": Permission denied"));
  };
  EXPECT_THAT(engine_->load(request()), StatusIs(absl::StatusCode::kPermissionDenied,
                                                 HasSubstr(weights_ + ": Permission denied")));
  EXPECT_EQ(ram().high_water_bytes, 0);
  expect_nothing_held();
  expect_a_load_without_the_fault_succeeds();
}

TEST_F(EngineFaultTest, UnreadableFilesAndFoldersArePermissionDeniedByModeBits) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "mode bits do not stop root (CI runs as root); "
                    "AFileThatMayNotBeOpenedIsPermissionDeniedNamingIt injects the same error";
  }
  struct Case {
    std::string path;  // made mode 000 for the load
    std::string message;
  };
  const std::string tiny = fs::canonical(models_dir_ + "/tiny").string();
  const std::vector<Case> cases = {
      {models_dir_, "'tiny' cannot be looked up in " + fs::canonical(models_dir_).string() +
                        ": Permission denied"},
      {tiny, tiny + "/config.json: Permission denied"},
      {weights_, weights_ + ": Permission denied"},
      {tiny + "/config.json", tiny + "/config.json: Permission denied"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    const fs::perms before = fs::status(c.path).permissions();
    fs::permissions(c.path, fs::perms::none);
    EXPECT_THAT(engine_->load(request()),
                StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr(c.message)));
    fs::permissions(c.path, before);
    EXPECT_EQ(ram().reserved_bytes, 0);
    EXPECT_EQ(ram().committed_bytes, 0);
    EXPECT_THAT(engine_->stats().entries, IsEmpty());
  }
  expect_a_load_without_the_fault_succeeds();
}

}  // namespace
}  // namespace diffusiond
