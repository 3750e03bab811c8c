// parse_json_strict: what it refuses, and that it takes time linear in the
// members of an object (a safetensors header is one object of n tensors).
#include "core/util/json.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

// {"t0":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}, "t1":..., ...}
std::string header_of(int tensors) {
  std::string text = "{";
  for (int i = 0; i < tensors; ++i) {
    absl::StrAppend(&text, i == 0 ? "" : ",", "\"t", i, R"(":{"dtype":"F32","shape":[1],"data_offsets":[)", 4 * i,
                    ",", 4 * i + 4, "]}");
  }
  return text + "}";
}

TEST(ParseJsonStrict, ParsesNestedValues) {
  absl::StatusOr<nlohmann::json> j = parse_json_strict(header_of(3), "h.json");
  ASSERT_THAT(j, IsOk());
  EXPECT_EQ(j->size(), 3u);
  EXPECT_EQ((*j)["t2"]["data_offsets"][1], 12);
  EXPECT_EQ((*j)["t0"]["dtype"], "F32");
}

TEST(ParseJsonStrict, RefusesDuplicateKeysAtAnyDepthNamingThem) {
  EXPECT_THAT(parse_json_strict(R"({"a":1,"b":2,"a":3})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("c.json: invalid JSON: duplicate key 'a'")));
  EXPECT_THAT(parse_json_strict(R"({"a":{"x":1,"x":2}})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("duplicate key 'x'")));
  // The same key in sibling objects is no duplicate.
  EXPECT_THAT(parse_json_strict(R"({"a":{"x":1},"b":{"x":2}})", "c.json"), IsOk());
  const std::string long_key(10000, 'k');
  absl::StatusOr<nlohmann::json> j =
      parse_json_strict(absl::StrCat("{\"", long_key, "\":1,\"", long_key, "\":2}"), "c");
  EXPECT_THAT(j, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("duplicate key")));
  EXPECT_LT(j.status().message().size(), 400u);  // the key is quoted bounded
}

TEST(ParseJsonStrict, RefusesDeepNestingSyntaxErrorsAndTrailingBytes) {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  EXPECT_THAT(parse_json_strict(deep, "d.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than 64")));
  const std::string fine = std::string(10, '[') + "1" + std::string(10, ']');
  EXPECT_THAT(parse_json_strict(fine, "d.json"), IsOk());
  EXPECT_THAT(parse_json_strict(R"({"a":})", "e.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("e.json: invalid JSON at byte 6")));
  EXPECT_THAT(parse_json_strict(R"({"a":1} x)", "e.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid JSON at byte")));
}

// 200,000 tensor entries (13.6 MB; headers may have 100 MB) parse in under a
// second; the quadratic parser this replaced needed two minutes for 80,000.
// Run in a child under an alarm so that a regression fails rather than
// hangs.
void parse_a_huge_header_then_exit() {
  const std::string text = header_of(200000);
  ::alarm(60);
  absl::StatusOr<nlohmann::json> j = parse_json_strict(text, "huge");
  ::_exit(j.ok() && j->size() == 200000 ? 0 : 1);
}

TEST(ParseJsonStrictDeathTest, TimeIsLinearInTheMembersOfAnObject) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(parse_a_huge_header_then_exit(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace diffusiond
