// mask_crop.h against upstream diffusers' VaeImageProcessor with Pillow
// 9.4: get_crop_region's boxes, the "fill" and "crop" resizes,
// apply_overlay, and the preprocessed image and mask a request starts
// from (mask_crop_cases.inc, made by mask_crop_reference.py from
// upstream's own code); and the round trip a request makes.
#include "core/pipeline/mask_crop.h"

#include <torch/torch.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/pil_pattern.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::PilOutputDigest;
using ::diffusiond::testing::PilPatternSpec;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

// A black mask with rectangles of a colour, as the reference script's mask().
struct MaskRect {
  int64_t x0, y0, x1, y1;
  uint8_t rgb[3];
};
struct MaskSpec {
  const char* mode;  // "L" (grey: the rectangles' r) or "RGB"
  int64_t width, height;
  int rects;
  MaskRect rect[4];
};

struct MaskCropRegionCase {
  MaskSpec mask;
  int64_t width, height, pad;
  int64_t box[4];
};
struct MaskCropResizeCase {
  PilPatternSpec input;
  int64_t width, height;
  PilOutputDigest fill, crop;
};
struct MaskCropOverlayCase {
  MaskSpec mask;
  PilPatternSpec init, generated;
  int64_t box[4];
  PilOutputDigest expected;
};
struct MaskCropStartCase {
  MaskSpec mask;
  PilPatternSpec init;
  int64_t width, height, pad;
  PilOutputDigest image, mask_bytes;
};

#include "tests/unit/pipeline/mask_crop_cases.inc"

PilImage mask_of(const MaskSpec& spec) {
  PilImage mask = pil_new(::diffusiond::testing::pil_mode_named(spec.mode), spec.width, spec.height);
  for (int k = 0; k < spec.rects; ++k) {
    const MaskRect& r = spec.rect[k];
    for (int64_t y = r.y0; y < r.y1; ++y) {
      for (int64_t x = r.x0; x < r.x1; ++x) {
        for (int c = 0; c < mask.bands(); ++c) mask.at(x, y)[c] = r.rgb[c];
      }
    }
  }
  return mask;
}

void expect_digest(const PilImage& image, const PilOutputDigest& expected) {
  EXPECT_EQ(pil_mode_name(image.mode), expected.mode);
  EXPECT_EQ(image.width, expected.width);
  EXPECT_EQ(image.height, expected.height);
  EXPECT_EQ(::diffusiond::testing::pil_fnv1a(image), expected.fnv1a);
}

// A float tensor [3, h, w] or [h, w] as the bytes it holds (x · 255,
// rounded); a mask binarised at 0.5 first, as the pipeline does.
PilImage bytes_of(const torch::Tensor& t, bool binarise) {
  torch::Tensor v = binarise ? (t >= 0.5f).to(torch::kFloat32) : t;
  v = (v * 255.0f).round().clamp(0, 255).to(torch::kUInt8);
  if (v.dim() == 3) v = v.permute({1, 2, 0});
  v = v.contiguous();
  PilImage image = pil_new(v.dim() == 3 ? PilMode::kRgb : PilMode::kL, v.size(1), v.size(0));
  std::memcpy(image.pixels.data(), v.data_ptr<uint8_t>(), image.pixels.size());
  return image;
}

std::string box_text(const PilBox& b) { return absl::StrCat(b.x0, ",", b.y0, ",", b.x1, ",", b.y1); }

TEST(MaskCropTest, CropRegionIsUpstreams) {
  for (const MaskCropRegionCase& c : kMaskCropRegionCases) {
    SCOPED_TRACE(absl::StrCat(c.mask.width, "x", c.mask.height, " to ", c.width, "x", c.height, " pad ", c.pad));
    absl::StatusOr<PilBox> box = mask_crop_region(mask_of(c.mask), c.width, c.height, c.pad);
    ASSERT_THAT(box, IsOk());
    EXPECT_EQ(box_text(*box), box_text({c.box[0], c.box[1], c.box[2], c.box[3]}));
  }
}

TEST(MaskCropTest, BlackMaskIsRefused) {
  EXPECT_THAT(mask_crop_region(pil_new(PilMode::kL, 20, 10), 16, 16, 4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("padding_mask_crop")));
  // (0, 0, 3) is grey 0 once converted to "L", as upstream converts it.
  PilImage rgb = pil_new(PilMode::kRgb, 20, 10);
  rgb.at(3, 4)[2] = 3;
  EXPECT_THAT(mask_crop_region(rgb, 16, 16, 4), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("black")));
}

TEST(MaskCropTest, FillAndCropResizesAreUpstreams) {
  for (const MaskCropResizeCase& c : kMaskCropResizeCases) {
    SCOPED_TRACE(absl::StrCat(c.input.width, "x", c.input.height, " to ", c.width, "x", c.height));
    const PilImage in = ::diffusiond::testing::pil_pattern(c.input);
    expect_digest(resize_and_fill(in, c.width, c.height), c.fill);
    expect_digest(resize_and_crop(in, c.width, c.height), c.crop);
  }
}

TEST(MaskCropTest, OverlayIsUpstreams) {
  for (const MaskCropOverlayCase& c : kMaskCropOverlayCases) {
    SCOPED_TRACE(absl::StrCat(c.init.width, "x", c.init.height));
    const PilBox box{c.box[0], c.box[1], c.box[2], c.box[3]};
    expect_digest(apply_overlay(mask_of(c.mask), ::diffusiond::testing::pil_pattern(c.init),
                                ::diffusiond::testing::pil_pattern(c.generated), box),
                  c.expected);
  }
}

TEST(MaskCropTest, StartIsUpstreamsPreprocess) {
  for (const MaskCropStartCase& c : kMaskCropStartCases) {
    SCOPED_TRACE(absl::StrCat(c.init.width, "x", c.init.height, " to ", c.width, "x", c.height));
    const MaskCrop crop{c.pad, ::diffusiond::testing::pil_pattern(c.init), mask_of(c.mask)};
    absl::StatusOr<MaskCropStart> start = start_mask_crop(crop, c.width, c.height);
    ASSERT_THAT(start, IsOk());
    ASSERT_EQ(start->image.sizes().vec(), (std::vector<int64_t>{3, c.height, c.width}));
    ASSERT_EQ(start->mask.sizes().vec(), (std::vector<int64_t>{c.height, c.width}));
    expect_digest(bytes_of(start->image, false), c.image);
    expect_digest(bytes_of(start->mask, true), c.mask_bytes);
  }
}

TEST(MaskCropTest, FinishHasTheImagesSizeAndKeepsItOutsideTheMask) {
  const MaskCropStartCase& c = kMaskCropStartCases[0];
  const MaskCrop crop{c.pad, ::diffusiond::testing::pil_pattern(c.init), mask_of(c.mask)};
  absl::StatusOr<MaskCropStart> start = start_mask_crop(crop, c.width, c.height);
  ASSERT_THAT(start, IsOk());
  const torch::Tensor generated = torch::full({c.height, c.width, 3}, 7, torch::kUInt8);
  const torch::Tensor out = finish_mask_crop(crop, start->box, generated);
  ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{crop.image.height, crop.image.width, 3}));
  // Where the mask is black the original image is composited at full
  // opacity: its own bytes; where it is white, the generated 7s.
  const auto at = [&](int64_t x, int64_t y, int ch) { return out[y][x][ch].item<int>(); };
  EXPECT_EQ(at(0, 0, 1), crop.image.at(0, 0)[1]);
  EXPECT_EQ(at(35, 25, 0), 7);
}

TEST(MaskCropTest, BoxTooThinToFillIsRefused) {
  // A 200x4 image masked along its length: the box cannot grow to 16:64
  // and its fill resize would be 16x0 (Pillow's "height and width must
  // be > 0").
  PilImage mask = pil_new(PilMode::kL, 200, 4);
  for (int64_t x = 0; x < 200; ++x) *mask.at(x, 1) = 255;
  const MaskCrop crop{0, pil_new(PilMode::kRgb, 200, 4), mask};
  EXPECT_THAT(start_mask_crop(crop, 16, 64), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too thin")));
}

}  // namespace
}  // namespace diffusiond
