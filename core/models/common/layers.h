// Small functional building blocks shared by the architectures: RMSNorm,
// LayerNorm without affine, SwiGLU's gate, the sinusoidal timestep
// features, and the multi-axis rotary embedding. Each takes its weights as
// tensors already at the compute dtype; none reads a dtype from a parameter.
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_LAYERS_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_LAYERS_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace diffusiond {

// x * rsqrt(mean(x², -1) + eps) * weight, the variance in float32 (as
// upstream's RMSNorm), the result in x's dtype.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// rms_norm(x, weight, eps) * scale, with scale [batch, 1, dim] broadcast
// over x [batch, seq, dim] or undefined (then rms_norm alone): adaLN's
// modulated norm, in one pass on the CPU or a CUDA device.
torch::Tensor rms_norm_scaled(const torch::Tensor& x, const torch::Tensor& weight, double eps,
                              const torch::Tensor& scale);

// residual + gate * rms_norm(h, weight, eps), gate [batch, 1, dim] or
// undefined (then residual + rms_norm(h)): a block's gated residual.
torch::Tensor add_gated_rms_norm(const torch::Tensor& residual, const torch::Tensor& h,
                                 const torch::Tensor& weight, double eps, const torch::Tensor& gate);

// LN(x) * (1 + scale) + shift: LayerNorm over the last dim without affine,
// modulated per item (scale and shift [batch, 1, dim] broadcast over x
// [batch, seq, dim]) or per token ([batch, seq, dim]) -- adaLN as the FLUX
// and Qwen-Image blocks apply it. In one pass on the CPU or a CUDA device,
// float32 inside and rounded once, where composed bf16 ops would round the
// norm, 1 + scale and each step.
torch::Tensor modulated_layer_norm(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& shift,
                                   double eps);

// silu(gate) * up, written over `gate`, which it returns: SwiGLU's gate
// between a feed-forward's matmuls (Z-Image, Qwen3, Krea 2). On a CUDA
// device one fused pass (kernels/swiglu.h), float32 inside and rounded once;
// elsewhere (float16 too, as the norms), libtorch's silu_ and mul_ in
// place. `up` has gate's shape.
torch::Tensor silu_mul_(torch::Tensor gate, const torch::Tensor& up);

// Sinusoidal features [cos(a), sin(a)] of `t` (shape [batch]), a_j =
// float32(t) * exp(float32(-ln max_period) * j / (dim/2)), all in float32
// whatever the compute dtype: arguments reach ~1000 rad, where lower
// precision visibly moves results. A `scale` other than 1 multiplies the
// float32 products afterwards, a_j = scale * (t * f_j), as diffusers'
// Timesteps(scale=...) rounds (Qwen-Image passes sigma with scale 1000).
// Returns [batch, dim] float32.
torch::Tensor timestep_features(const torch::Tensor& t, int64_t dim, double max_period = 10000.0, double scale = 1.0);

// Rotary embedding over several position axes. Angles pos * theta^(-2j/d)
// are computed in float64 and rounded to float32; cos/sin in float32.
class MultiAxisRope {
 public:
  MultiAxisRope(double theta, std::vector<int64_t> axes_dims, std::vector<int64_t> axes_lens);

  // Returns cos and sin, each [n, head_dim/2] float32, for ids [n, axes]
  // (int64). REQUIRES: each id is below its axis length.
  std::pair<torch::Tensor, torch::Tensor> lookup(const torch::Tensor& ids) const;
  const std::vector<int64_t>& axes_lens() const { return axes_lens_; }

 private:
  std::vector<int64_t> axes_lens_;
  std::vector<torch::Tensor> cos_, sin_;  // per axis [len, d/2]
};

// Rotates interleaved pairs (2j, 2j+1) of x [batch, seq, heads, head_dim] by
// cos/sin [batch, seq, head_dim/2], in float32; returns x's dtype.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// What attention takes from a q or k projection x [batch, seq, heads,
// head_dim]: the per-head RMSNorm (when norm_weight is defined), the rotary
// embedding, and the transpose to [batch, heads, seq, head_dim], contiguous.
// One pass on the CPU or a CUDA device, at float32.
torch::Tensor norm_rope_heads(const torch::Tensor& x, const torch::Tensor& norm_weight, double eps,
                              const torch::Tensor& cos, const torch::Tensor& sin);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_LAYERS_H_
