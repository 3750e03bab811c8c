#include "core/util/file_text.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

class FileTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per test: ctest runs the tests of this file in parallel.
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string("file_text_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(FileTextTest, ReadsARegularFile) {
  std::ofstream(dir_ / "config.json") << "{\"dim\": 4}";
  absl::StatusOr<std::string> text = read_text_file((dir_ / "config.json").string());
  ASSERT_THAT(text, IsOk());
  EXPECT_EQ(*text, "{\"dim\": 4}");
}

TEST_F(FileTextTest, MissingIsNotFound) {
  EXPECT_THAT(read_text_file((dir_ / "absent.json").string()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no such file")));
}

TEST_F(FileTextTest, ADirectoryIsAPermanentErrorNotARetryableOne) {
  std::filesystem::create_directories(dir_ / "config.json");
  EXPECT_THAT(read_text_file((dir_ / "config.json").string()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("a directory")));
}

TEST_F(FileTextTest, ANamedPipeIsRefusedWithoutBlocking) {
  const std::string fifo = (dir_ / "config.json").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Opening it would block until a writer came; the type check comes first.
  EXPECT_THAT(read_text_file(fifo), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("special file")));
}

}  // namespace
}  // namespace diffusiond
