// The Pillow operations of pil_image.h against Pillow 9.4 itself: every
// conversion over all 65,536 colour/alpha pairs, pastes (converted,
// clipped, through an "L" mask), ImageOps.invert and alpha_composite. The
// references are Pillow's outputs' hashes (pil_image_cases.inc, made by
// pil_reference.py).
#include "core/image/pil_image.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/testing/pil_pattern.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::PilOutputDigest;
using ::diffusiond::testing::PilPatternSpec;

struct PilOpCase {
  const char* name;
  PilPatternSpec inputs[3];
  int64_t x, y;  // a paste's position
  PilOutputDigest expected;
};

#include "tests/unit/image/pil_image_cases.inc"

// What case `c` asks of pil_image.h, by its name.
PilImage run_op(const PilOpCase& c) {
  const auto input = [&](int k) { return ::diffusiond::testing::pil_pattern(c.inputs[k]); };
  const std::string name = c.name;
  if (name.rfind("convert_", 0) == 0) {
    return pil_convert(input(0), ::diffusiond::testing::pil_mode_named(name.substr(name.rfind('_') + 1)));
  }
  if (name.rfind("paste_masked_", 0) == 0) {
    PilImage dest = input(0);
    pil_paste_masked(&dest, input(1), input(2));
    return dest;
  }
  if (name.rfind("paste", 0) == 0) {
    PilImage dest = input(0);
    pil_paste(&dest, input(1), c.x, c.y);
    return dest;
  }
  if (name == "invert") return pil_invert(input(0));
  return pil_alpha_composite(input(0), input(1));
}

TEST(PilImageTest, EqualsPillow) {
  for (const PilOpCase& c : kPilOpCases) {
    SCOPED_TRACE(c.name);
    const PilImage out = run_op(c);
    EXPECT_EQ(pil_mode_name(out.mode), c.expected.mode);
    EXPECT_EQ(out.width, c.expected.width);
    EXPECT_EQ(out.height, c.expected.height);
    EXPECT_EQ(::diffusiond::testing::pil_fnv1a(out), c.expected.fnv1a);
  }
}

TEST(PilImageTest, CropCopiesTheBox) {
  const PilImage in = ::diffusiond::testing::pil_pattern({"RGB", 7, 5, "noise", 3u});
  const PilImage out = pil_crop(in, {2, 1, 6, 4});
  ASSERT_EQ(out.width, 4);
  ASSERT_EQ(out.height, 3);
  for (int64_t y = 0; y < 3; ++y) {
    for (int64_t x = 0; x < 4; ++x) {
      for (int c = 0; c < 3; ++c) EXPECT_EQ(out.at(x, y)[c], in.at(x + 2, y + 1)[c]);
    }
  }
  EXPECT_EQ(pil_crop(in, {3, 3, 3, 5}).pixels.size(), 0u);
}

}  // namespace
}  // namespace diffusiond
