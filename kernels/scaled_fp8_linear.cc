#include "kernels/scaled_fp8_linear.h"

#include <vector>

#include "kernels/fp8_codec.h"
#include "kernels/fp8_format.h"
#include "kernels/torch_compat.h"

namespace diffusiond {
namespace {

// The smallest activation scale: an all-zero x would otherwise divide 0/0.
constexpr float kMinActivationScale = 1e-12f;

// cuBLAS's FP8 matmul needs in and out features that are multiples of 16.
constexpr int64_t kFeatureMultiple = 16;

int64_t padding_to_multiple(int64_t n) { return (kFeatureMultiple - n % kFeatureMultiple) % kFeatureMultiple; }

// `codes` [rows, cols] with `extra_rows` and `extra_cols` of zero codes (+0)
// after its own: a zero code adds nothing to a product.
torch::Tensor pad_codes(const torch::Tensor& codes, int64_t extra_rows, int64_t extra_cols) {
  if (extra_rows == 0 && extra_cols == 0) return codes;
  return torch::constant_pad_nd(codes, {0, extra_cols, 0, extra_rows}, 0);
}

bool is_float_dtype(torch::ScalarType dtype) {
  return dtype == torch::kBFloat16 || dtype == torch::kFloat16 || dtype == torch::kFloat32;
}

}  // namespace

const char* scaled_fp8_linear_unavailable_reason(const torch::Tensor& x,
                                                 const torch::Tensor& codes_e4m3,
                                                 torch::ScalarType out_dtype) {
  if (!compat::kHaveCuda) return "this build has no CUDA kernels";
  if (!compat::kHaveScaledMm) return "libtorch is older than 2.5 (no _scaled_mm as called here)";
  if (!x.is_cuda() || !codes_e4m3.is_cuda()) return "input or weight is not on a CUDA device";
  if (x.device() != codes_e4m3.device()) return "input and weight are on different devices";
  // FP8 tensor cores: Ada (8.9) and later. libtorch's _scaled_mm runs there
  // too; only Hopper has been measured.
  if (compat::cuda_compute_capability(x.device().index()) < 89) {
    return "the device's compute capability is below 8.9";
  }
  if (!is_float_dtype(x.scalar_type())) return "input dtype is not bfloat16, float16 or float32";
  if (!is_float_dtype(out_dtype)) return "output dtype is not bfloat16, float16 or float32";
  if (codes_e4m3.scalar_type() != torch::kUInt8 || codes_e4m3.dim() != 2 ||
      !codes_e4m3.is_contiguous()) {
    return "weight is not a contiguous 2-D uint8 tensor of codes";
  }
  if (x.dim() < 1 || x.size(-1) != codes_e4m3.size(1)) {
    return "input's last dimension differs from the weight's in features";
  }
  return nullptr;
}

std::optional<torch::Tensor> scaled_fp8_linear(const torch::Tensor& x, const torch::Tensor& codes_e4m3,
                                               float weight_scale, const torch::Tensor& bias,
                                               torch::ScalarType out_dtype, bool fast_accum) {
  if (scaled_fp8_linear_unavailable_reason(x, codes_e4m3, out_dtype) != nullptr) {
    return std::nullopt;
  }
  const int64_t in_features = codes_e4m3.size(1);
  const int64_t out_features = codes_e4m3.size(0);
  const torch::Tensor x2 = x.reshape({-1, in_features}).contiguous();
  // One pass for max|x| and one that writes the codes, reading x in its own
  // dtype: the ops this replaced (a float32 copy, abs, amax, divide, clamp,
  // cast) moved about 39 bytes per bf16 element against 5, on every layer's
  // input. The scale stays on the device: reading it back would stall the
  // stream at every layer.
  torch::Tensor codes_x = torch::empty(x2.sizes(), x2.options().dtype(torch::kUInt8));
  torch::Tensor scale_x = torch::empty({}, x2.options().dtype(torch::kFloat32));
  const absl::Status quantized = fp8_quantize(x2, Fp8Format::kE4M3Fn, kMinActivationScale, codes_x, scale_x);
  TORCH_CHECK(quantized.ok(), "scaled_fp8_linear: ", std::string(quantized.message()));
  const torch::Tensor scale_w = torch::scalar_tensor(weight_scale, scale_x.options());
  // Features that are not multiples of 16 are padded with zero codes, per
  // call: such layers are an embedder's or a head's, small beside a block's.
  const int64_t pad_in = padding_to_multiple(in_features), pad_out = padding_to_multiple(out_features);
  // _scaled_mm adds a bias only into bf16/fp16 outputs, of that dtype and
  // of the (padded) out features; otherwise it is added after.
  const bool fuse_bias = bias.defined() && out_dtype != torch::kFloat32 && pad_out == 0;
  std::optional<torch::Tensor> y =
      compat::scaled_mm_e4m3fn(pad_codes(codes_x, 0, pad_in), pad_codes(codes_e4m3, pad_out, pad_in), scale_x, scale_w,
                               fuse_bias ? bias.to(out_dtype) : torch::Tensor(), out_dtype, fast_accum);
  if (!y.has_value()) return std::nullopt;
  if (pad_out > 0) *y = y->narrow(1, 0, out_features).contiguous();
  if (bias.defined() && !fuse_bias) y->add_(bias.to(out_dtype));
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = out_features;
  return y->view(shape);
}

}  // namespace diffusiond
