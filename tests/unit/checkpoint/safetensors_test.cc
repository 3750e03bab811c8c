// Header validation over a table of malformed files: each must fail with
// the right code and a message naming the file and the problem.
#include "core/checkpoint/safetensors.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;

absl::StatusOr<SafetensorsHeader> read_bytes(const TempDir& dir, const std::string& bytes) {
  const std::string path = dir.write("t.safetensors", bytes);
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> f = open_random_access_file(path);
  if (!f.ok()) return f.status();
  return read_safetensors_header(**f);
}

TEST(Safetensors, ParsesAValidHeader) {
  TempDir dir;
  absl::StatusOr<SafetensorsHeader> h =
      read_bytes(dir, testing::safetensors_bytes(R"({"__metadata__":{"format":"pt"},)"
                                                 R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},)"
                                                 R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                                                 R"("z":{"dtype":"F8_E4M3","shape":[0],"data_offsets":[28,28]}})",
                                                 28));
  ASSERT_THAT(h, IsOk());
  ASSERT_EQ(h->tensors.size(), 3u);
  EXPECT_EQ(h->tensors[0].name, "a");  // data order
  EXPECT_EQ(h->tensors[0].nbytes, 24);
  EXPECT_EQ(h->tensors[0].numel, 6);
  EXPECT_EQ(h->tensors[1].name, "b");
  EXPECT_EQ(h->tensors[1].file_offset, h->data_begin + 24);
  EXPECT_EQ(h->metadata.at("format"), "pt");
}

struct Malformed {
  const char* name;
  std::string bytes;
  absl::StatusCode code;
  const char* message;
};

void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

class MalformedFile : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedFile, IsRejectedWithAClearError) {
  TempDir dir;
  EXPECT_THAT(read_bytes(dir, GetParam().bytes),
              StatusIs(GetParam().code, HasSubstr(GetParam().message)));
  EXPECT_THAT(read_bytes(dir, GetParam().bytes),
              StatusIs(GetParam().code, HasSubstr("t.safetensors")));
}

const std::string kOne = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedFile,
    ::testing::Values(
        Malformed{"TooShort", "abc", absl::StatusCode::kDataLoss, "too short"},
        Malformed{"LyingHeaderLength", testing::safetensors_bytes(kOne, 8, 4096), absl::StatusCode::kDataLoss,
                  "runs past the end"},
        Malformed{"HugeHeaderLength", testing::safetensors_bytes(kOne, 8, int64_t{1} << 40),
                  absl::StatusCode::kInvalidArgument, "exceeds the limit"},
        Malformed{"TruncatedData", testing::safetensors_bytes(kOne, 5), absl::StatusCode::kDataLoss, "truncated"},
        Malformed{"OffsetsPastEof",
                  testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[100,108]}})", 8),
                  absl::StatusCode::kDataLoss, "data region holds only 8 bytes"},
        Malformed{"Overlap",
                  testing::safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                             12),
                  absl::StatusCode::kInvalidArgument, "overlap"},
        Malformed{"UnknownDtype",
                  testing::safetensors_bytes(R"({"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1),
                  absl::StatusCode::kInvalidArgument, "unknown dtype \"F4\""},
        Malformed{
            "ShapeOverflow",
            testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                                       8),
            absl::StatusCode::kInvalidArgument, "overflows 64 bits"},
        Malformed{
            "ByteSizeOverflow",
            testing::safetensors_bytes(R"({"w":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]}})",
                                       8),
            absl::StatusCode::kInvalidArgument, "overflows 64 bits"},
        Malformed{"SizeMismatch",
                  testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                  absl::StatusCode::kInvalidArgument, "needs 12"},
        Malformed{"NegativeShape",
                  testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
                  absl::StatusCode::kInvalidArgument, "non-negative integers"},
        Malformed{"DuplicateKey",
                  testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                             R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                             8),
                  absl::StatusCode::kInvalidArgument, "duplicate key 'w'"},
        Malformed{"BadJson", testing::safetensors_bytes(R"({"w":{"dtype":"F32",)", 8),
                  absl::StatusCode::kInvalidArgument, "invalid JSON at byte"},
        Malformed{"NotAnObject", testing::safetensors_bytes("[1,2]", 0), absl::StatusCode::kInvalidArgument,
                  "not a JSON object"},
        Malformed{"BackwardsOffsets",
                  testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
                  absl::StatusCode::kInvalidArgument, "not a [begin, end] pair"},
        Malformed{"ExtraField",
                  testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8),
                  absl::StatusCode::kInvalidArgument, "unexpected field 'x'"},
        Malformed{"MetadataNotStrings", testing::safetensors_bytes(R"({"__metadata__":{"n":1}})", 0),
                  absl::StatusCode::kInvalidArgument, "is not a string"},
        Malformed{"DeepNesting", testing::safetensors_bytes(std::string(100, '[') + std::string(100, ']'), 0),
                  absl::StatusCode::kInvalidArgument, "nesting deeper"}),
    [](const ::testing::TestParamInfo<Malformed>& info) { return info.param.name; });

}  // namespace
}  // namespace diffusiond
