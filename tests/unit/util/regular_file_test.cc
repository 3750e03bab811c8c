// open_regular_file: the one type check before any read of a user-named
// file, made without blocking.
#include "core/util/regular_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(RegularFile, OpensARegularFileWithItsSizeAndBlockingReads) {
  testing::TempDir dir;
  std::ofstream(dir.path("w.bin")) << "twelve bytes";
  absl::StatusOr<RegularFile> f = open_regular_file(dir.path("w.bin"));
  ASSERT_THAT(f.status(), IsOk());
  EXPECT_EQ(f->size_bytes(), 12);
  char buffer[12];
  EXPECT_EQ(::read(f->fd(), buffer, sizeof(buffer)), 12);
}

TEST(RegularFile, ANamedPipeIsRefusedPromptlyNamingThePath) {
  testing::TempDir dir;
  const std::string fifo = dir.path("weights.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const absl::Time start = absl::Now();
  EXPECT_THAT(open_regular_file(fifo).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(fifo), HasSubstr("not a regular file"), HasSubstr("named pipe"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST(RegularFile, ADirectoryIsAFailedPrecondition) {
  testing::TempDir dir;
  EXPECT_THAT(open_regular_file(dir.path()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("a directory")));
}

TEST(RegularFile, ACharacterDeviceIsRefused) {
  EXPECT_THAT(open_regular_file("/dev/zero").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("/dev/zero: not a regular file")));
}

TEST(RegularFile, MissingIsNotFoundAndANulBytePathIsInvalid) {
  testing::TempDir dir;
  EXPECT_THAT(open_regular_file(dir.path("absent")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no such file")));
  const std::string with_nul = dir.path("a") + std::string(1, '\0') + "b";
  EXPECT_THAT(open_regular_file(with_nul).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NUL")));
}

}  // namespace
}  // namespace diffusiond
