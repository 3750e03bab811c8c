#include "tests/bench/gpu_bench_layers.h"

#include "core/models/common/layers.h"

namespace diffusiond::bench {
namespace {

constexpr int kTrials = 3;
constexpr int kCalls = 20;

// Upstream's RMSNorm (diffusers' RMSNorm, Z-Image's): float32 variance,
// the normed value back in x's dtype, then the weight.
torch::Tensor composed_rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  const torch::Tensor x32 = x.to(torch::kFloat32);
  return (x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps)).to(x.scalar_type()) * w;
}

// One measurement: both forms' seconds per call, their ratio, and the
// fused form's rate over `bytes`.
template <typename Fused, typename Composed>
nlohmann::json compare(const BenchOptions& options, int64_t bytes, Fused&& fused, Composed&& composed) {
  const double fused_s = best_seconds_per_call(options.device, kTrials, kCalls, fused);
  const double composed_s = best_seconds_per_call(options.device, kTrials, kCalls, composed);
  return {{"fused", fused_s},
          {"composed", composed_s},
          {"composed_vs_fused", composed_s / fused_s},
          {"fused_gb_per_s", static_cast<double>(bytes) / fused_s / 1e9},
          {"bytes", bytes}};
}

}  // namespace

nlohmann::json fused_layers_section(const BenchOptions& options) {
  const bool small = options.dry_run;
  const int64_t tokens = small ? 64 : 4224, dim = small ? 256 : 3840, heads = small ? 2 : 30, head_dim = 128;
  const int64_t flux_tokens = small ? 64 : 4608, flux_dim = small ? 256 : 3072;
  const torch::TensorOptions bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(options.device);
  const torch::TensorOptions f32 = bf16.dtype(torch::kFloat32);
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({1, tokens, dim}, bf16), h = torch::randn({1, tokens, dim}, bf16);
  const torch::Tensor w = torch::rand({dim}, bf16) + 0.5, scale = torch::rand({1, 1, dim}, bf16) + 0.5;
  const torch::Tensor gate = torch::rand({1, 1, dim}, bf16);
  const torch::Tensor q = torch::randn({1, tokens, heads, head_dim}, bf16), qw = torch::rand({head_dim}, bf16) + 0.5;
  const torch::Tensor angles = torch::rand({1, tokens, head_dim / 2}, f32) * 6;
  const torch::Tensor cos = angles.cos(), sin = angles.sin();
  const torch::Tensor fx = torch::randn({1, flux_tokens, flux_dim}, bf16);
  const torch::Tensor fscale = torch::randn({1, 1, flux_dim}, bf16) * 0.1,
                      fshift = torch::randn({1, 1, flux_dim}, bf16);
  const int64_t row_bytes = x.numel() * 2;  // one bf16 activation
  // Z-Image's feed-forward width; up in [0, 1) so that the gate, written
  // over call after call, shrinks rather than overflows.
  const int64_t hidden = small ? 512 : 10240;
  torch::Tensor ffn_gate = torch::randn({1, tokens, hidden}, bf16);
  const torch::Tensor ffn_up = torch::rand({1, tokens, hidden}, bf16);

  nlohmann::json out = {{"device", options.device.str()}, {"tokens", tokens}, {"dim", dim}};
  out["rms_norm_scaled"] = compare(
      options, 2 * row_bytes, [&] { rms_norm_scaled(x, w, 1e-5, scale); },
      [&] { (void)(composed_rms_norm(x, w, 1e-5) * scale); });
  out["add_gated_rms_norm"] = compare(
      options, 3 * row_bytes, [&] { add_gated_rms_norm(x, h, w, 1e-5, gate); },
      [&] { (void)(x + gate * composed_rms_norm(h, w, 1e-5)); });
  out["norm_rope_heads"] = compare(
      options, 2 * q.numel() * 2, [&] { norm_rope_heads(q, qw, 1e-5, cos, sin); },
      [&] { (void)apply_rope(composed_rms_norm(q, qw, 1e-5), cos, sin).transpose(1, 2).contiguous(); });
  out["modulated_layer_norm"] = compare(
      options, 2 * fx.numel() * 2, [&] { modulated_layer_norm(fx, fscale, fshift, 1e-6); },
      [&] { (void)(torch::layer_norm(fx, {flux_dim}, {}, {}, 1e-6) * (1 + fscale) + fshift); });
  out["silu_mul"] = compare(
      options, 3 * ffn_gate.numel() * 2, [&] { silu_mul_(ffn_gate, ffn_up); },
      [&] { torch::silu_(ffn_gate).mul_(ffn_up); });
  return out;
}

}  // namespace diffusiond::bench
