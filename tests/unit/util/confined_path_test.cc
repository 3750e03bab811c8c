#include "core/util/confined_path.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class ConfinedPath : public ::testing::Test {
 protected:
  void SetUp() override {
    models_ = tmp_.path("models");
    tmp_.write("models/z/config.json", "{}");
    tmp_.write("secret.safetensors", "x");
  }
  TempDir tmp_;
  std::string models_;
};

TEST_F(ConfinedPath, RelativeAndAbsolutePathsInsideResolve) {
  absl::StatusOr<std::string> p = resolve_confined_path(models_, "z/config.json");
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(*p, fs::canonical(tmp_.path("models/z/config.json")).string());
  EXPECT_THAT(resolve_confined_path(models_, tmp_.path("models/z")), IsOk());
}

TEST_F(ConfinedPath, DotDotAndAbsolutePathsOutsideAreRefused) {
  EXPECT_THAT(resolve_confined_path(models_, "../secret.safetensors"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside the models directory")));
  EXPECT_THAT(resolve_confined_path(models_, tmp_.path("secret.safetensors")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside")));
  EXPECT_THAT(resolve_confined_path(models_, "../nonexistent"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside")));
}

TEST_F(ConfinedPath, APathWithANulByteIsRefusedNotCut) {
  const std::string with_nul("z\0/../../secret.safetensors", 27);
  ASSERT_EQ(with_nul.size(), 27u);
  EXPECT_THAT(resolve_confined_path(models_, with_nul),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NUL byte")));
}

TEST_F(ConfinedPath, SymlinksThatEscapeAreRefused) {
  fs::create_symlink(tmp_.path("secret.safetensors"), tmp_.path("models/link.safetensors"));
  EXPECT_THAT(resolve_confined_path(models_, "link.safetensors"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("resolves to")));
}

TEST_F(ConfinedPath, MissingAndEmptyPaths) {
  EXPECT_THAT(resolve_confined_path(models_, "nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'nope' does not exist")));
  EXPECT_THAT(resolve_confined_path(models_, ""), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(resolve_confined_path(tmp_.path("no-such-root"), "z"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("models directory")));
}

}  // namespace
}  // namespace diffusiond
