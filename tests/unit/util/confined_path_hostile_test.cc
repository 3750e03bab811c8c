// Hostile model paths: newlines, long components, very long paths and
// `..` tricks get a clear code and a bounded message.
#include <string>

#include "core/util/confined_path.h"
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

class HostilePath : public ::testing::Test {
 protected:
  void SetUp() override {
    models_ = tmp_.path("models");
    tmp_.write("models/z/config.json", "{}");
    tmp_.write("secret.safetensors", "x");
  }
  TempDir tmp_;
  std::string models_;
};

TEST_F(HostilePath, ANewlineIsJustAMissingName) {
  EXPECT_THAT(resolve_confined_path(models_, "z\nconfig.json").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("does not exist")));
}

TEST_F(HostilePath, AComponentLongerThanTheFilesystemAllowsIsNotFoundWithABoundedMessage) {
  const absl::Status s = resolve_confined_path(models_, std::string(300, 'x')).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kNotFound, HasSubstr("(300 bytes)")));
  EXPECT_LT(s.message().size(), 200u + 100u + models_.size());
}

TEST_F(HostilePath, AMegabytePathIsRefusedWithABoundedMessage) {
  std::string path;
  while (path.size() < (1u << 20)) path += "a/";
  const absl::Status s = resolve_confined_path(models_, path).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kNotFound, HasSubstr("bytes)")));
  EXPECT_LT(s.message().size(), 200u + 100u + models_.size());
}

TEST_F(HostilePath, DotDotThroughAnExistingFolderIsStillConfined) {
  EXPECT_THAT(resolve_confined_path(models_, "z/../../secret.safetensors").status(),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside the models directory")));
  EXPECT_THAT(resolve_confined_path(models_, "z/./../z/config.json").status(), IsOk());
}

}  // namespace
}  // namespace diffusiond
