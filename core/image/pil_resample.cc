#include "core/image/pil_resample.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace diffusiond {
namespace {

// Resample.c's 8-bit coefficients: 32 bits less 8 for the value and 2 for
// the kernel's overshoot.
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr double kPi = 3.14159265358979323846;  // M_PI, which strict C++ lacks

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= kPi;
  return std::sin(x) / x;
}

double lanczos(double x) {
  if (-3.0 <= x && x < 3.0) return sinc(x) * sinc(x / 3.0);
  return 0.0;
}

// Keys' cubic convolution with a = -0.5, as Pillow writes it.
double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

struct Filter {
  double (*kernel)(double);
  double support;
};

Filter filter_of(PilFilter filter) {
  return filter == PilFilter::kLanczos ? Filter{lanczos, 3.0} : Filter{bicubic, 2.0};
}

// One axis's kernels: output pixel i reads inputs [first[i], first[i] +
// count[i]) with weights[i * ksize + j], fixed point.
struct AxisKernels {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

// precompute_coeffs() then normalize_coeffs_8bpc(): `out_size` kernels over
// the input span [in0, in1) of an axis of `in_size` pixels. The box's ends
// are C floats and their difference a float, as in Pillow; the rest is
// double, and the casts truncate toward zero as C's do.
AxisKernels axis_kernels(const Filter& filter, int64_t in_size, float in0, float in1, int64_t out_size) {
  const double scale = static_cast<double>(in1 - in0) / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter.support * filter_scale;
  AxisKernels k;
  k.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  k.first.resize(out_size);
  k.count.resize(out_size);
  k.weights.assign(static_cast<size_t>(out_size) * k.ksize, 0);
  std::vector<double> w(k.ksize);
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = in0 + (static_cast<double>(i) + 0.5) * scale;
    const double ss = 1.0 / filter_scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), static_cast<int>(in_size)) - xmin;
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = filter.kernel((x + xmin - center + 0.5) * ss);
      sum += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      if (sum != 0.0) w[x] /= sum;
      const double fixed = w[x] * (1 << kPrecisionBits);
      k.weights[i * k.ksize + x] = static_cast<int32_t>(w[x] < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    k.first[i] = xmin;
    k.count[i] = std::max(xmax, 0);
  }
  return k;
}

// Resample.c's clip8: the sum's integer part, clipped to a byte.
inline uint8_t clip8(int32_t sum) {
  const int32_t v = sum >> kPrecisionBits;  // arithmetic: floor for negative sums
  return static_cast<uint8_t>(std::clamp(v, 0, 255));
}

// The horizontal pass over input rows [row0, row0 + rows).
PilImage resample_horizontal(const PilImage& in, const AxisKernels& k, int64_t row0, int64_t rows, int64_t width) {
  PilImage out = pil_new(in.mode, width, rows);
  const int bands = in.bands();
  for (int64_t y = 0; y < rows; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      const int32_t* weights = &k.weights[x * k.ksize];
      for (int c = 0; c < bands; ++c) {
        int32_t sum = 1 << (kPrecisionBits - 1);
        for (int j = 0; j < k.count[x]; ++j) sum += in.at(k.first[x] + j, row0 + y)[c] * weights[j];
        out.at(x, y)[c] = clip8(sum);
      }
    }
  }
  return out;
}

// The vertical pass, the kernels' first rows counted from `row0`.
PilImage resample_vertical(const PilImage& in, const AxisKernels& k, int64_t row0, int64_t height) {
  PilImage out = pil_new(in.mode, in.width, height);
  const int bands = in.bands();
  for (int64_t y = 0; y < height; ++y) {
    const int32_t* weights = &k.weights[y * k.ksize];
    const int64_t first = k.first[y] - row0;
    for (int64_t x = 0; x < in.width; ++x) {
      for (int c = 0; c < bands; ++c) {
        int32_t sum = 1 << (kPrecisionBits - 1);
        for (int j = 0; j < k.count[y]; ++j) sum += in.at(x, first + j)[c] * weights[j];
        out.at(x, y)[c] = clip8(sum);
      }
    }
  }
  return out;
}

// ImagingResampleInner for 8-bit images.
PilImage resample(const PilImage& in, int64_t width, int64_t height, const Filter& filter, const PilResizeBox& box) {
  // Pillow compares the box's right and bottom with the output's size here.
  const bool need_horizontal = width != in.width || box[0] != 0 || box[2] != width;
  const bool need_vertical = height != in.height || box[1] != 0 || box[3] != height;
  const AxisKernels vertical = axis_kernels(filter, in.height, box[1], box[3], height);
  // The rows the vertical pass reads: the only ones the horizontal makes.
  const int64_t row0 = vertical.first[0];
  const int64_t row_end = vertical.first[height - 1] + vertical.count[height - 1];
  PilImage out;
  int64_t out_row0 = 0;
  const PilImage* current = &in;
  if (need_horizontal) {
    out = resample_horizontal(in, axis_kernels(filter, in.width, box[0], box[2], width), row0, row_end - row0,
                              width);
    out_row0 = row0;
    current = &out;
  }
  if (need_vertical) return resample_vertical(*current, vertical, out_row0, height);
  return need_horizontal ? out : in;
}

}  // namespace

PilImage pil_resize(const PilImage& image, int64_t width, int64_t height, PilFilter filter, const PilResizeBox& box) {
  assert(width >= 1 && height >= 1);
  assert(box[0] >= 0 && box[1] >= 0 && box[2] <= image.width && box[3] <= image.height);
  assert(box[2] - box[0] >= 0 && box[3] - box[1] >= 0);
  // Image.resize: the same size over the whole image is a copy.
  if (width == image.width && height == image.height && box[0] == 0 && box[1] == 0 && box[2] == image.width &&
      box[3] == image.height) {
    return image;
  }
  if (image.mode == PilMode::kRgba) {
    return pil_convert(pil_resize(pil_convert(image, PilMode::kRgbPremultiplied), width, height, filter, box),
                       PilMode::kRgba);
  }
  // _imaging.c: an integer box of the output's size is a crop.
  if (box[0] - static_cast<float>(static_cast<int>(box[0])) == 0 && box[2] - box[0] == width &&
      box[1] - static_cast<float>(static_cast<int>(box[1])) == 0 && box[3] - box[1] == height) {
    return pil_crop(image, {static_cast<int64_t>(box[0]), static_cast<int64_t>(box[1]), static_cast<int64_t>(box[2]),
                            static_cast<int64_t>(box[3])});
  }
  return resample(image, width, height, filter_of(filter), box);
}

PilImage pil_resize(const PilImage& image, int64_t width, int64_t height, PilFilter filter) {
  return pil_resize(image, width, height, filter,
                    {0.0f, 0.0f, static_cast<float>(image.width), static_cast<float>(image.height)});
}

}  // namespace diffusiond
