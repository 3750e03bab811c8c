#include "core/pipeline/mask_crop.h"

#include <cassert>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/image/pil_resample.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// Python's // of integers (floor division), for the one place a negative
// numerator is conceivable.
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

// Grows [lo, hi) by `diff` about its centre as get_crop_region does, then
// shifts it back inside [0, size) and clips it there.
void grow_span(int64_t diff, int64_t size, int64_t* lo, int64_t* hi) {
  *lo -= floor_div(diff, 2);
  *hi += diff - floor_div(diff, 2);
  if (*hi >= size) {
    const int64_t over = *hi - size;
    *hi -= over;
    *lo -= over;
  }
  if (*lo < 0) {
    *hi -= *lo;
    *lo = 0;
  }
  if (*hi >= size) *hi = size;
}

// The size _resize_and_fill (`fill`) or _resize_and_crop resizes an
// image of `in_w` x `in_h` to before centring it in width x height.
struct FitSize {
  int64_t width, height;
};
FitSize fit_size(int64_t in_w, int64_t in_h, int64_t width, int64_t height, bool fill) {
  const double ratio = static_cast<double>(width) / static_cast<double>(height);
  const double src_ratio = static_cast<double>(in_w) / static_cast<double>(in_h);
  if (fill) {
    return {ratio < src_ratio ? width : in_w * height / in_h, ratio >= src_ratio ? height : in_h * width / in_w};
  }
  return {ratio > src_ratio ? width : in_w * height / in_h, ratio <= src_ratio ? height : in_h * width / in_w};
}

// uint8 [h, w, 3] as an "RGB" image.
PilImage rgb_of(const torch::Tensor& pixels) {
  const torch::Tensor t = pixels.to(torch::kCPU, torch::kUInt8).contiguous();
  PilImage image = pil_new(PilMode::kRgb, t.size(1), t.size(0));
  std::memcpy(image.pixels.data(), t.data_ptr<uint8_t>(), image.pixels.size());
  return image;
}

// An image's bytes / 255 as float32 [bands, h, w], the leading dimension
// dropped for one band.
torch::Tensor unit_floats(const PilImage& image) {
  uint8_t* bytes = const_cast<uint8_t*>(image.pixels.data());  // only read: to() copies
  const torch::Tensor hwc = torch::from_blob(bytes, {image.height, image.width, image.bands()}, torch::kUInt8);
  const torch::Tensor t = hwc.permute({2, 0, 1}).to(torch::kFloat32) / 255.0f;
  return image.bands() == 1 ? t[0].contiguous() : t.contiguous();
}

}  // namespace

absl::StatusOr<PilBox> mask_crop_region(const PilImage& mask, int64_t width, int64_t height, int64_t pad) {
  assert(width > 0 && height > 0 && pad >= 0);
  const PilImage grey = pil_convert(mask, PilMode::kL);
  const int64_t w = grey.width, h = grey.height;
  int64_t left = w, right = -1, top = h, bottom = -1;  // the nonzero pixels' extent
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      if (*grey.at(x, y) == 0) continue;
      left = std::min(left, x);
      right = std::max(right, x);
      top = std::min(top, y);
      bottom = std::max(bottom, y);
    }
  }
  if (right < 0) {
    return absl::InvalidArgumentError(absl::StrCat("padding_mask_crop: mask_image (", w, "x", h,
                                                   ") is black everywhere, so there is no region to crop to"));
  }
  PilBox box{std::max<int64_t>(left - pad, 0), std::max<int64_t>(top - pad, 0), std::min(right + 1 + pad, w),
             std::min(bottom + 1 + pad, h)};
  const double ratio_box = static_cast<double>(box.width()) / static_cast<double>(box.height());
  const double ratio = static_cast<double>(width) / static_cast<double>(height);
  if (ratio_box > ratio) {
    const double desired_height = static_cast<double>(box.width()) / ratio;
    grow_span(static_cast<int64_t>(desired_height - static_cast<double>(box.height())), h, &box.y0, &box.y1);
  } else {
    const double desired_width = static_cast<double>(box.height()) * ratio;
    grow_span(static_cast<int64_t>(desired_width - static_cast<double>(box.width())), w, &box.x0, &box.x1);
  }
  return box;
}

PilImage resize_and_fill(const PilImage& image, int64_t width, int64_t height) {
  const FitSize fit = fit_size(image.width, image.height, width, height, /*fill=*/true);
  const PilImage resized = pil_resize(image, fit.width, fit.height, PilFilter::kLanczos);
  PilImage out = pil_new(PilMode::kRgb, width, height);
  pil_paste(&out, resized, width / 2 - fit.width / 2, height / 2 - fit.height / 2);
  // The strips' resize passes no filter: Image.resize's default, bicubic.
  const auto edge = [&](int64_t w, int64_t h, float x0, float y0, float x1, float y1) {
    return pil_resize(resized, w, h, PilFilter::kBicubic, {x0, y0, x1, y1});
  };
  const double ratio = static_cast<double>(width) / static_cast<double>(height);
  const double src_ratio = static_cast<double>(image.width) / static_cast<double>(image.height);
  const auto w = static_cast<float>(resized.width), h = static_cast<float>(resized.height);
  if (ratio < src_ratio) {
    const int64_t fill = height / 2 - fit.height / 2;
    if (fill > 0) {
      pil_paste(&out, edge(width, fill, 0, 0, static_cast<float>(width), 0), 0, 0);
      pil_paste(&out, edge(width, fill, 0, h, static_cast<float>(width), h), 0, fill + fit.height);
    }
  } else if (ratio > src_ratio) {
    const int64_t fill = width / 2 - fit.width / 2;
    if (fill > 0) {
      pil_paste(&out, edge(fill, height, 0, 0, 0, static_cast<float>(height)), 0, 0);
      pil_paste(&out, edge(fill, height, w, 0, w, static_cast<float>(height)), fill + fit.width, 0);
    }
  }
  return out;
}

PilImage resize_and_crop(const PilImage& image, int64_t width, int64_t height) {
  const FitSize fit = fit_size(image.width, image.height, width, height, /*fill=*/false);
  PilImage out = pil_new(PilMode::kRgb, width, height);
  pil_paste(&out, pil_resize(image, fit.width, fit.height, PilFilter::kLanczos), width / 2 - fit.width / 2,
            height / 2 - fit.height / 2);
  return out;
}

PilImage apply_overlay(const PilImage& mask, const PilImage& init_image, const PilImage& image, const PilBox& box) {
  assert(mask.width == init_image.width && mask.height == init_image.height);
  PilImage kept = pil_new(PilMode::kRgbPremultiplied, init_image.width, init_image.height);
  pil_paste_masked(&kept, pil_convert(pil_convert(init_image, PilMode::kRgba), PilMode::kRgbPremultiplied),
                   pil_invert(pil_convert(mask, PilMode::kL)));
  PilImage base = pil_new(PilMode::kRgba, init_image.width, init_image.height);
  pil_paste(&base, resize_and_crop(image, box.width(), box.height()), box.x0, box.y0);
  const PilImage generated = pil_convert(pil_convert(base, PilMode::kRgb), PilMode::kRgba);
  return pil_convert(pil_alpha_composite(generated, pil_convert(kept, PilMode::kRgba)), PilMode::kRgb);
}

absl::StatusOr<MaskCropStart> start_mask_crop(const MaskCrop& crop, int64_t width, int64_t height) {
  assert(crop.image.width == crop.mask.width && crop.image.height == crop.mask.height);
  MaskCropStart start;
  DIFFUSIOND_ASSIGN_OR_RETURN(start.box, mask_crop_region(crop.mask, width, height, crop.padding));
  const FitSize fit = fit_size(start.box.width(), start.box.height(), width, height, /*fill=*/true);
  if (fit.width < 1 || fit.height < 1) {  // Pillow's "height and width must be > 0"
    return absl::InvalidArgumentError(absl::StrCat(
        "padding_mask_crop: the crop box ", start.box.width(), "x", start.box.height(), " at (", start.box.x0, ", ",
        start.box.y0, ") of the ", crop.image.width, "x", crop.image.height,
        " image is too thin to resize into ", width, "x", height, " keeping its aspect ratio"));
  }
  start.image = unit_floats(resize_and_fill(pil_crop(crop.image, start.box), width, height));
  start.mask = unit_floats(pil_convert(resize_and_fill(pil_crop(crop.mask, start.box), width, height), PilMode::kL));
  return start;
}

torch::Tensor finish_mask_crop(const MaskCrop& crop, const PilBox& box, const torch::Tensor& pixels) {
  PilImage out = apply_overlay(crop.mask, crop.image, rgb_of(pixels), box);
  return torch::from_blob(out.pixels.data(), {out.height, out.width, 3}, torch::kUInt8).clone();
}

}  // namespace diffusiond
