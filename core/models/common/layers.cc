#include "core/models/common/layers.h"

#include <cmath>
#include <optional>

#include "kernels/norm_rope.h"
#include "kernels/swiglu.h"

namespace diffusiond {
namespace {

// The fused loops (kernels/norm_rope.h, and on CUDA kernels/swiglu.h) take
// activations that are all float32 or all bfloat16, on the CPU or a CUDA
// device, and any floating-point vectors beside them on the same device
// (norm weights, modulation, cos/sin), read as float32. Everything else
// (float16, mixed dtypes or devices, other devices) takes the composed
// libtorch ops.
std::optional<FloatKind> fused_kind(std::initializer_list<const torch::Tensor*> activations,
                                    std::initializer_list<const torch::Tensor*> vectors) {
  std::optional<torch::ScalarType> dtype;
  std::optional<torch::Device> device;
  for (const torch::Tensor* t : activations) {
    if (!t->defined()) continue;
    if (device.has_value() && (t->device() != *device || t->scalar_type() != *dtype)) return std::nullopt;
    dtype = t->scalar_type();
    device = t->device();
  }
  if (!device.has_value() || !fused_norm_rope_runs_on(*device)) return std::nullopt;
  for (const torch::Tensor* t : vectors) {
    if (t->defined() && (t->device() != *device || !t->is_floating_point())) return std::nullopt;
  }
  if (dtype == torch::kFloat32) return FloatKind::kF32;
  if (dtype == torch::kBFloat16) return FloatKind::kBF16;
  return std::nullopt;
}

// `t` as contiguous float32 (itself when it is), kept alive by `keep`.
const float* float32_of(const torch::Tensor& t, torch::Tensor* keep) {
  if (!t.defined()) return nullptr;
  *keep = t.to(torch::kFloat32).contiguous();
  return keep->data_ptr<float>();
}

// A modulation vector of x [batch, seq, dim] as float32 rows, or null: per
// item ([batch, 1, dim] as [batch, dim]) or, `by_token`, per token ([batch,
// seq, dim]; a per-item vector repeated over its item's tokens).
const float* modulation_rows(const torch::Tensor& t, const torch::Tensor& x, bool by_token, torch::Tensor* keep) {
  if (!t.defined()) return nullptr;
  return float32_of(t.expand({x.size(0), by_token ? x.size(1) : 1, x.size(-1)}), keep);
}

torch::Tensor rms_norm_fused(FloatKind kind, const torch::Tensor& h, const torch::Tensor& weight, double eps,
                             const torch::Tensor& scale, const torch::Tensor& gate, const torch::Tensor& residual) {
  const torch::Tensor x = h.contiguous();
  torch::Tensor out = torch::empty_like(x), w, scale_rows, gate_rows, res;
  RmsNormRowsArgs a;
  a.kind = kind;
  a.x = x.data_ptr();
  a.dim = x.size(-1);
  a.rows = x.numel() / std::max<int64_t>(a.dim, 1);
  a.weight = float32_of(weight, &w);
  a.eps = static_cast<float>(eps);
  // scale and gate are per batch item: the rows of one item share them.
  a.rows_per_group = x.dim() == 3 ? x.size(1) : a.rows;
  a.scale = modulation_rows(scale, x, /*by_token=*/false, &scale_rows);
  a.gate = modulation_rows(gate, x, /*by_token=*/false, &gate_rows);
  if (residual.defined()) {
    res = residual.contiguous();
    a.residual = res.data_ptr();
  }
  a.out = out.data_ptr();
  if (a.rows > 0) rms_norm_rows(a, x.device());
  return out;
}

// The fused paths need x [batch, seq, dim], a norm weight of dim values
// (when there is one) and per-item [batch, 1, dim] vectors, or with
// `per_token` also [batch, seq, dim] ones; other shapes take the composed
// ops.
bool fusable_shapes(const torch::Tensor& x, const torch::Tensor& weight,
                    std::initializer_list<const torch::Tensor*> vectors, bool per_token = false) {
  if (x.dim() != 3 || (weight.defined() && weight.numel() != x.size(2))) return false;
  for (const torch::Tensor* v : vectors) {
    if (!v->defined()) continue;
    const bool rows_ok = v->dim() == 3 && (v->size(1) == 1 || (per_token && v->size(1) == x.size(1)));
    if (!rows_ok || v->size(0) != x.size(0) || v->size(2) != x.size(2)) return false;
  }
  return true;
}

}  // namespace

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  if (const std::optional<FloatKind> kind = fused_kind({&x}, {&weight});
      kind.has_value() && x.dim() >= 1 && weight.numel() == x.size(-1)) {
    return rms_norm_fused(*kind, x, weight, eps, {}, {}, {});
  }
  const torch::Tensor x32 = x.to(torch::kFloat32);
  const torch::Tensor variance = x32.pow(2).mean(-1, /*keepdim=*/true);
  return (x32 * torch::rsqrt(variance + eps)).to(x.scalar_type()) * weight;
}

torch::Tensor rms_norm_scaled(const torch::Tensor& x, const torch::Tensor& weight, double eps,
                              const torch::Tensor& scale) {
  if (const std::optional<FloatKind> kind = fused_kind({&x}, {&weight, &scale});
      kind.has_value() && fusable_shapes(x, weight, {&scale})) {
    return rms_norm_fused(*kind, x, weight, eps, scale, {}, {});
  }
  const torch::Tensor normed = rms_norm(x, weight, eps);
  return scale.defined() ? normed * scale : normed;
}

torch::Tensor add_gated_rms_norm(const torch::Tensor& residual, const torch::Tensor& h,
                                 const torch::Tensor& weight, double eps, const torch::Tensor& gate) {
  if (const std::optional<FloatKind> kind = fused_kind({&residual, &h}, {&weight, &gate});
      kind.has_value() && fusable_shapes(h, weight, {&gate}) && residual.sizes() == h.sizes()) {
    return rms_norm_fused(*kind, h, weight, eps, {}, gate, residual);
  }
  const torch::Tensor normed = rms_norm(h, weight, eps);
  return residual + (gate.defined() ? gate * normed : normed);
}

torch::Tensor modulated_layer_norm(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& shift,
                                   double eps) {
  if (const std::optional<FloatKind> kind = fused_kind({&x}, {&scale, &shift});
      kind.has_value() && fusable_shapes(x, torch::Tensor(), {&scale, &shift}, /*per_token=*/true)) {
    const torch::Tensor in = x.contiguous();
    torch::Tensor out = torch::empty_like(in), scale_rows, shift_rows;
    // Qwen-Image's zero_cond_t modulates per token (reference images at
    // t = 0); then both vectors are taken per token.
    const auto per_token = [](const torch::Tensor& v) { return v.defined() && v.size(1) != 1; };
    const bool by_token = per_token(scale) || per_token(shift);
    LayerNormRowsArgs a;
    a.kind = *kind;
    a.x = in.data_ptr();
    a.dim = in.size(2);
    a.rows = in.size(0) * in.size(1);
    a.eps = static_cast<float>(eps);
    a.rows_per_group = by_token ? 1 : in.size(1);
    a.scale = modulation_rows(scale, in, by_token, &scale_rows);
    a.shift = modulation_rows(shift, in, by_token, &shift_rows);
    a.out = out.data_ptr();
    if (a.rows > 0 && a.dim > 0) layer_norm_rows(a, in.device());
    return out;
  }
  return torch::layer_norm(x, {x.size(-1)}, {}, {}, eps).mul_(1.0 + scale).add_(shift);
}

torch::Tensor silu_mul_(torch::Tensor gate, const torch::Tensor& up) {
  const std::optional<FloatKind> kind = fused_kind({&gate, &up}, {});
  if (!kind.has_value() || !fused_swiglu_runs_on(gate.device()) || up.sizes() != gate.sizes() ||
      !gate.is_contiguous() || !up.is_contiguous()) {
    return torch::silu_(gate).mul_(up);
  }
  silu_mul(*kind, gate.data_ptr(), up.data_ptr(), gate.numel(), gate.device());
  return gate;
}

torch::Tensor timestep_features(const torch::Tensor& t, int64_t dim, double max_period, double scale) {
  const int64_t half = dim / 2;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(t.device());
  const torch::Tensor exponent =
      torch::arange(0, half, f32) * static_cast<float>(-std::log(max_period)) / static_cast<float>(half);
  torch::Tensor args = t.to(torch::kFloat32).unsqueeze(1) * torch::exp(exponent).unsqueeze(0);
  if (scale != 1.0) args = args * static_cast<float>(scale);
  torch::Tensor features = torch::cat({torch::cos(args), torch::sin(args)}, -1);
  if (dim % 2) features = torch::cat({features, torch::zeros_like(features.narrow(1, 0, 1))}, -1);
  return features;
}

MultiAxisRope::MultiAxisRope(double theta, std::vector<int64_t> axes_dims,
                             std::vector<int64_t> axes_lens)
    : axes_lens_(std::move(axes_lens)) {
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  for (size_t i = 0; i < axes_dims.size(); ++i) {
    const int64_t d = axes_dims[i];
    const torch::Tensor freqs = 1.0 / torch::pow(theta, torch::arange(0, d, 2, f64) / static_cast<double>(d));
    const torch::Tensor angles = torch::outer(torch::arange(axes_lens_[i], f64), freqs).to(torch::kFloat32);
    cos_.push_back(torch::cos(angles));
    sin_.push_back(torch::sin(angles));
  }
}

std::pair<torch::Tensor, torch::Tensor> MultiAxisRope::lookup(const torch::Tensor& ids) const {
  std::vector<torch::Tensor> cos, sin;
  for (size_t i = 0; i < cos_.size(); ++i) {
    const torch::Tensor index = ids.select(1, static_cast<int64_t>(i));
    // The tables are built once on the CPU; a forward on a device reads
    // its copy there (a few hundred KiB).
    cos.push_back(cos_[i].to(ids.device()).index_select(0, index));
    sin.push_back(sin_[i].to(ids.device()).index_select(0, index));
  }
  return {torch::cat(cos, -1), torch::cat(sin, -1)};
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const auto sizes = x.sizes();
  const torch::Tensor pairs = x.to(torch::kFloat32).reshape({sizes[0], sizes[1], sizes[2], -1, 2});
  const torch::Tensor even = pairs.select(-1, 0), odd = pairs.select(-1, 1);
  const torch::Tensor c = cos.unsqueeze(2), s = sin.unsqueeze(2);  // over heads
  const torch::Tensor out = torch::stack({even * c - odd * s, even * s + odd * c}, -1);
  return out.flatten(3).to(x.scalar_type());
}

torch::Tensor norm_rope_heads(const torch::Tensor& x, const torch::Tensor& norm_weight, double eps,
                              const torch::Tensor& cos, const torch::Tensor& sin) {
  const std::optional<FloatKind> kind = fused_kind({&x}, {&norm_weight, &cos, &sin});
  if (kind.has_value() && x.dim() == 4 && x.size(3) % 2 == 0 &&
      (!norm_weight.defined() || norm_weight.numel() == x.size(3))) {
    const torch::Tensor in = x.contiguous();
    torch::Tensor w, c, s;
    torch::Tensor out = torch::empty({x.size(0), x.size(2), x.size(1), x.size(3)}, x.options());
    RopeHeadsArgs a;
    a.kind = *kind;
    a.x = in.data_ptr();
    a.batch = x.size(0), a.seq = x.size(1), a.heads = x.size(2), a.dim = x.size(3);
    a.norm_weight = float32_of(norm_weight, &w);
    a.eps = static_cast<float>(eps);
    a.cos = float32_of(cos, &c);
    a.sin = float32_of(sin, &s);
    a.out = out.data_ptr();
    if (out.numel() > 0) rope_heads(a, x.device());
    return out;
  }
  const torch::Tensor normed = norm_weight.defined() ? rms_norm(x, norm_weight, eps) : x;
  return apply_rope(normed, cos, sin).transpose(1, 2).contiguous();
}

}  // namespace diffusiond
