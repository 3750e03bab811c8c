#include "core/util/bounded_text.h"

#include <string>

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

}  // namespace
}  // namespace diffusiond
