// Checkpoint headers that declare far more than the file holds: refused
// from the header alone, before any tensor is allocated or read.
#include <cstdint>
#include <string>

#include "core/checkpoint/checkpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(HostileHeader, ThreeGigabytesDeclaredOverTwelveBytesOfData) {
  TempDir dir;
  // 805306368 float32 = 3 GiB, with offsets to match, over 12 bytes.
  const std::string path = dir.write(
      "big.safetensors",
      testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[805306368],"data_offsets":[0,3221225472]}})", 12));
  EXPECT_THAT(Checkpoint::open(path).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("big.safetensors"), HasSubstr("data region holds only 12 bytes"))));
}

TEST(HostileHeader, AShapeThatDisagreesWithItsOffsetsIsRefused) {
  TempDir dir;
  // 3 GiB of shape over offsets that cover the 12 bytes present.
  const std::string path =
      dir.write("lie.safetensors",
                testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[805306368],"data_offsets":[0,12]}})", 12));
  EXPECT_THAT(Checkpoint::open(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("lie.safetensors"), HasSubstr("needs"))));
}

}  // namespace
}  // namespace diffusiond
