// pil_resize against Pillow 9.4's own Image.resize(size, filter, box),
// Lanczos and bicubic: up and down, one axis or both, fractional boxes and
// boxes of no height or width (upstream's fill strips), the crop and copy
// shortcuts, and RGBA's premultiplied path. The references are Pillow's outputs' hashes
// (pil_resample_cases.inc, made by pil_reference.py).
#include "core/image/pil_resample.h"

#include <array>
#include <utility>

#include "gtest/gtest.h"
#include "tests/testing/pil_pattern.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::PilOutputDigest;
using ::diffusiond::testing::PilPatternSpec;

struct PilResizeCase {
  const char* name;
  PilPatternSpec input;
  int64_t width, height;
  PilFilter filter;
  bool has_box;
  std::array<float, 4> box;
  PilOutputDigest expected;
};

#include "tests/unit/image/pil_resample_cases.inc"

TEST(PilResampleTest, EqualsPillowsResize) {
  for (const PilResizeCase& c : kPilResizeCases) {
    SCOPED_TRACE(c.name);
    const PilImage in = ::diffusiond::testing::pil_pattern(c.input);
    const PilImage out = c.has_box ? pil_resize(in, c.width, c.height, c.filter, c.box)
                                   : pil_resize(in, c.width, c.height, c.filter);
    EXPECT_EQ(pil_mode_name(out.mode), c.expected.mode);
    EXPECT_EQ(out.width, c.expected.width);
    EXPECT_EQ(out.height, c.expected.height);
    EXPECT_EQ(::diffusiond::testing::pil_fnv1a(out), c.expected.fnv1a);
  }
}

TEST(PilResampleTest, ConstantImageStaysConstant) {
  // The kernels are normalised to 1, and rounding adds half a unit: a flat
  // image is flat at any size (a check that needs no reference).
  PilImage in = pil_new(PilMode::kRgb, 13, 9);
  for (uint8_t& v : in.pixels) v = 200;
  for (const PilFilter filter : {PilFilter::kLanczos, PilFilter::kBicubic}) {
    for (const auto& [w, h] : {std::pair<int64_t, int64_t>{40, 3}, {3, 40}, {5, 5}}) {
      const PilImage out = pil_resize(in, w, h, filter);
      ASSERT_EQ(out.pixels.size(), static_cast<size_t>(w * h * 3));
      for (uint8_t v : out.pixels) ASSERT_EQ(v, 200);
    }
  }
}

}  // namespace
}  // namespace diffusiond
