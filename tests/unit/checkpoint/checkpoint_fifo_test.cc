// A named pipe where a checkpoint expects a file (the weights file, a shard,
// config.json) is refused at once, naming the path: opening one for
// reading would otherwise wait forever for a writer.
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "absl/time/clock.h"
#include "core/checkpoint/checkpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

void make_fifo(const std::string& path) { ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path; }

// Opens `path` and expects FAILED_PRECONDITION naming `fifo`, within a second.
void expect_refused_promptly(const std::string& path, const std::string& fifo) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(path);
  EXPECT_THAT(c.status(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                   AllOf(HasSubstr(fifo), HasSubstr("named pipe"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST(CheckpointFifo, ASingleWeightsFileThatIsAPipe) {
  testing::TempDir dir;
  const std::string fifo = dir.path("model.safetensors");
  make_fifo(fifo);
  expect_refused_promptly(fifo, fifo);
}

TEST(CheckpointFifo, TheWeightsFileOfAFolderThatIsAPipe) {
  testing::TempDir dir;
  dir.write("m/config.json", "{}");
  const std::string fifo = dir.path("m/diffusion_pytorch_model.safetensors");
  make_fifo(fifo);
  expect_refused_promptly(dir.path("m"), fifo);
}

TEST(CheckpointFifo, AShardThatIsAPipe) {
  testing::TempDir dir;
  dir.write("m/config.json", "{}");
  dir.write("m/diffusion_pytorch_model.safetensors.index.json",
            R"({"weight_map": {"a": "part-1.safetensors", "b": "part-2.safetensors"}})");
  testing::write_safetensors(dir.path("m/part-1.safetensors"),
                             {testing::filled_tensor("a", DType::kF32, {2})});
  const std::string fifo = dir.path("m/part-2.safetensors");
  make_fifo(fifo);
  expect_refused_promptly(dir.path("m"), fifo);
}

TEST(CheckpointFifo, AConfigJsonThatIsAPipe) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path("m"));
  testing::write_safetensors(dir.path("m/diffusion_pytorch_model.safetensors"),
                             {testing::filled_tensor("a", DType::kF32, {2})});
  const std::string fifo = dir.path("m/config.json");
  make_fifo(fifo);
  expect_refused_promptly(dir.path("m"), fifo);
}

TEST(CheckpointFifo, AShardIndexThatIsAPipe) {
  testing::TempDir dir;
  dir.write("m/config.json", "{}");
  const std::string fifo = dir.path("m/diffusion_pytorch_model.safetensors.index.json");
  make_fifo(fifo);
  expect_refused_promptly(dir.path("m"), fifo);
}

}  // namespace
}  // namespace diffusiond
