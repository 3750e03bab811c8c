#include "kernels/norm_rope_cpu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "kernels/torch_compat.h"

namespace diffusiond {
namespace {

// Independent partial sums let the compiler vectorise the reduction
// without -ffast-math (which would license it to reorder everything else).
constexpr int kLanes = 16;

DIFFUSIOND_CPU_CLONES
float sum_of_squares(const float* __restrict__ x, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j] * x[i + j];
  }
  for (; i < n; ++i) acc[0] += x[i] * x[i];
  float total = 0;
  for (int j = 0; j < kLanes; ++j) total += acc[j];
  return total;
}

inline float inverse_rms(const float* x, int64_t n, float eps) {
  const float mean = sum_of_squares(x, n) / static_cast<float>(n);
  return 1.0f / std::sqrt(mean + eps);
}

// One row of rms_norm_rows_cpu. Pointers may alias (out == x or residual);
// each element is read before it is written, so no __restrict__ here.
DIFFUSIOND_CPU_CLONES
void norm_row(const float* x, int64_t n, float r, const float* weight, const float* scale,
              const float* gate, const float* residual, float* out) {
  if (scale == nullptr && gate == nullptr && residual == nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * r) * weight[i];
  } else if (scale != nullptr && gate == nullptr && residual == nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = ((x[i] * r) * weight[i]) * scale[i];
  } else if (gate != nullptr && residual != nullptr && scale == nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = residual[i] + gate[i] * ((x[i] * r) * weight[i]);
  } else if (residual != nullptr && scale == nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = residual[i] + (x[i] * r) * weight[i];
  } else {
    for (int64_t i = 0; i < n; ++i) {
      float v = (x[i] * r) * weight[i];
      if (scale != nullptr) v *= scale[i];
      if (gate != nullptr) v = gate[i] * v;
      if (residual != nullptr) v = residual[i] + v;
      out[i] = v;
    }
  }
}

DIFFUSIOND_CPU_CLONES
void rope_row(const float* __restrict__ x, int64_t half, float r, const float* __restrict__ weight,
              const float* __restrict__ c, const float* __restrict__ s, float* __restrict__ out) {
  for (int64_t j = 0; j < half; ++j) {
    float e = x[2 * j], o = x[2 * j + 1];
    if (weight != nullptr) {
      e = (e * r) * weight[2 * j];
      o = (o * r) * weight[2 * j + 1];
    }
    out[2 * j] = e * c[j] - o * s[j];
    out[2 * j + 1] = e * s[j] + o * c[j];
  }
}

// Rows per task: enough work to amortise scheduling at dim ~100-4000.
int64_t grain_rows(int64_t dim) { return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(dim, 1)); }

}  // namespace

void rms_norm_rows_cpu(const RmsNormRowsArgs& a) {
  at::parallel_for(0, a.rows, grain_rows(a.dim), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* x = a.x + row * a.dim;
      const int64_t group = row / a.rows_per_group;
      norm_row(x, a.dim, inverse_rms(x, a.dim, a.eps), a.weight,
               a.scale != nullptr ? a.scale + group * a.dim : nullptr,
               a.gate != nullptr ? a.gate + group * a.dim : nullptr,
               a.residual != nullptr ? a.residual + row * a.dim : nullptr, a.out + row * a.dim);
    }
  });
}

void rope_heads_cpu(const RopeHeadsArgs& a) {
  const int64_t rows = a.batch * a.seq * a.heads, half = a.dim / 2;
  at::parallel_for(0, rows, grain_rows(a.dim), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      // row = (b * seq + s) * heads + h, the input's order.
      const int64_t h = row % a.heads, bs = row / a.heads, s = bs % a.seq, b = bs / a.seq;
      const float* x = a.x + row * a.dim;
      const float r = a.norm_weight != nullptr ? inverse_rms(x, a.dim, a.eps) : 1.0f;
      rope_row(x, half, r, a.norm_weight, a.cos + bs * half, a.sin + bs * half,
               a.out + ((b * a.heads + h) * a.seq + s) * a.dim);
    }
  });
}

}  // namespace diffusiond
