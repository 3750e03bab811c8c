#include "core/util/bounded_text.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

TEST(Bounded, ShortTextIsWhole) { EXPECT_EQ(bounded("demo"), "demo"); }

TEST(Bounded, LongTextIsCutAndSaysHowLong) {
  const std::string id(100000, 'x');
  const std::string quoted = bounded(id);
  EXPECT_EQ(quoted.substr(0, kMaxEchoedBytes), id.substr(0, kMaxEchoedBytes));
  EXPECT_EQ(quoted.substr(kMaxEchoedBytes), "... (100000 bytes)");
}

TEST(BoundedList, AShortListIsWhole) {
  EXPECT_EQ(bounded_list({"a", "b"}), "a; b");
  EXPECT_EQ(bounded_list({}), "");
}

TEST(BoundedList, ALongListShowsTheFirstFewAndACount) {
  std::vector<std::string> problems;
  for (int i = 0; i < 10000; ++i) problems.push_back("unexpected tensor \"x" + std::to_string(i) + "\"");
  const std::string text = bounded_list(problems);
  EXPECT_EQ(text, "unexpected tensor \"x0\"; unexpected tensor \"x1\"; unexpected tensor \"x2\"; "
                  "unexpected tensor \"x3\"; and 9996 more");
}

TEST(BoundedList, EachItemIsCut) {
  const std::vector<std::string> problems(10, std::string(5000, 'y'));
  EXPECT_LT(bounded_list(problems, 4, 100).size(), 4 * 130u);
}

}  // namespace
}  // namespace diffusiond
