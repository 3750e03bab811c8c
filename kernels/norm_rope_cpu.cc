#include "kernels/norm_rope_cpu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/float_kind_cpu.h"
#include "kernels/torch_compat.h"

namespace diffusiond {
namespace {

// Independent partial sums let the compiler vectorise the reduction
// without -ffast-math (which would license it to reorder everything else).
constexpr int kLanes = 16;

// sum(term(x[i])) in kLanes partial sums, added up in lane order at the
// end. Inlined into each caller, so it vectorises for each clone's ISA.
template <typename Term>
__attribute__((always_inline)) inline float lane_sum(const float* __restrict__ x, int64_t n, Term term) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += term(x[i + j]);
  }
  for (; i < n; ++i) acc[0] += term(x[i]);
  float total = 0;
  for (int j = 0; j < kLanes; ++j) total += acc[j];
  return total;
}

DIFFUSIOND_CPU_CLONES
float sum_of_squares(const float* __restrict__ x, int64_t n) {
  return lane_sum(x, n, [](float v) { return v * v; });
}

DIFFUSIOND_CPU_CLONES
float sum_of_squared_deviations(const float* __restrict__ x, int64_t n, float mean) {
  return lane_sum(x, n, [mean](float v) {
    const float d = v - mean;
    return d * d;
  });
}

DIFFUSIOND_CPU_CLONES
float sum(const float* __restrict__ x, int64_t n) {
  return lane_sum(x, n, [](float v) { return v; });
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

// One row of layer_norm_rows_cpu; out may alias x (each element is read
// before it is written).
DIFFUSIOND_CPU_CLONES
void layer_norm_row(const float* x, int64_t n, float eps, const float* scale, const float* shift, float* out) {
  const float mean = sum(x, n) / static_cast<float>(n);
  const float r = 1.0f / std::sqrt(sum_of_squared_deviations(x, n, mean) / static_cast<float>(n) + eps);
  if (scale != nullptr && shift != nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = ((x[i] - mean) * r) * (1.0f + scale[i]) + shift[i];
  } else {
    for (int64_t i = 0; i < n; ++i) {
      float v = (x[i] - mean) * r;
      if (scale != nullptr) v = v * (1.0f + scale[i]);
      if (shift != nullptr) v = v + shift[i];
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

// One row of bfloat16 widened into float32, and back (rounded).
DIFFUSIOND_CPU_CLONES
void widen_bf16_row(const void* __restrict__ in, int64_t n, float* __restrict__ out) {
  for (int64_t i = 0; i < n; ++i) out[i] = load_float<FloatKind::kBF16>(in, i);
}

DIFFUSIOND_CPU_CLONES
void narrow_bf16_row(const float* __restrict__ in, int64_t n, void* __restrict__ out) {
  for (int64_t i = 0; i < n; ++i) store_float<FloatKind::kBF16>(out, i, in[i]);
}

// One task's view of rows of `kind`: float32 rows are used in place,
// bfloat16 rows are widened into (and narrowed from) two buffers of the
// task's own, reused from row to row.
class Rows {
 public:
  Rows(FloatKind kind, int64_t dim) : kind_(kind), dim_(dim) {
    if (kind_ == FloatKind::kBF16) buffers_.assign(2 * dim, 0.0f);
  }
  // Row `row` of `base` as float32, in buffer `slot` (0 or 1) when widened.
  const float* in(const void* base, int64_t row, int slot) {
    if (kind_ == FloatKind::kF32) return static_cast<const float*>(base) + row * dim_;
    float* buffer = buffers_.data() + slot * dim_;
    widen_bf16_row(static_cast<const uint16_t*>(base) + row * dim_, dim_, buffer);
    return buffer;
  }
  // Where row `row` of `base` is written as float32: in place, or buffer
  // `slot`, which store() then narrows into place.
  float* out(void* base, int64_t row, int slot) {
    if (kind_ == FloatKind::kF32) return static_cast<float*>(base) + row * dim_;
    return buffers_.data() + slot * dim_;
  }
  void store(void* base, int64_t row, int slot) {
    if (kind_ == FloatKind::kF32) return;
    narrow_bf16_row(buffers_.data() + slot * dim_, dim_, static_cast<uint16_t*>(base) + row * dim_);
  }

 private:
  const FloatKind kind_;
  const int64_t dim_;
  std::vector<float> buffers_;
};

// Rows per task: enough work to amortise scheduling at dim ~100-4000.
int64_t grain_rows(int64_t dim) { return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(dim, 1)); }

}  // namespace

void rms_norm_rows_cpu(const RmsNormRowsArgs& a) {
  at::parallel_for(0, a.rows, grain_rows(a.dim), [&](int64_t begin, int64_t end) {
    Rows rows(a.kind, a.dim);
    for (int64_t row = begin; row < end; ++row) {
      const float* x = rows.in(a.x, row, 0);
      const int64_t group = row / a.rows_per_group;
      // The output may alias x (slot 0) or the residual (slot 1): norm_row
      // reads each element before it writes it.
      float* out = rows.out(a.out, row, 0);
      norm_row(x, a.dim, inverse_rms(x, a.dim, a.eps), a.weight, a.scale != nullptr ? a.scale + group * a.dim : nullptr,
               a.gate != nullptr ? a.gate + group * a.dim : nullptr,
               a.residual != nullptr ? rows.in(a.residual, row, 1) : nullptr, out);
      rows.store(a.out, row, 0);
    }
  });
}

void layer_norm_rows_cpu(const LayerNormRowsArgs& a) {
  at::parallel_for(0, a.rows, grain_rows(a.dim), [&](int64_t begin, int64_t end) {
    Rows rows(a.kind, a.dim);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t group = row / a.rows_per_group;
      layer_norm_row(rows.in(a.x, row, 0), a.dim, a.eps, a.scale != nullptr ? a.scale + group * a.dim : nullptr,
                     a.shift != nullptr ? a.shift + group * a.dim : nullptr, rows.out(a.out, row, 0));
      rows.store(a.out, row, 0);
    }
  });
}

void rope_heads_cpu(const RopeHeadsArgs& a) {
  const int64_t rows = a.batch * a.seq * a.heads, half = a.dim / 2;
  at::parallel_for(0, rows, grain_rows(a.dim), [&](int64_t begin, int64_t end) {
    Rows view(a.kind, a.dim);
    for (int64_t row = begin; row < end; ++row) {
      // row = (b * seq + s) * heads + h, the input's order.
      const int64_t h = row % a.heads, bs = row / a.heads, s = bs % a.seq, b = bs / a.seq;
      const float* x = view.in(a.x, row, 0);
      const float r = a.norm_weight != nullptr ? inverse_rms(x, a.dim, a.eps) : 1.0f;
      const int64_t out_row = (b * a.heads + h) * a.seq + s;
      rope_row(x, half, r, a.norm_weight, a.cos + bs * half, a.sin + bs * half, view.out(a.out, out_row, 1));
      view.store(a.out, out_row, 1);
    }
  });
}

}  // namespace diffusiond
