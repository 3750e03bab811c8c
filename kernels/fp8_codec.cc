#include "kernels/fp8_codec.h"

#include <ATen/record_function.h>

#include "absl/strings/str_cat.h"
#include "kernels/fp8_cpu.h"
#include "kernels/torch_compat.h"

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
#include "kernels/cuda/fp8_codec.cuh"
#endif

namespace diffusiond {
namespace {

// Checks the float/codes pair an op works on; returns the float side's kind.
absl::StatusOr<FloatKind> check_pair(const torch::Tensor& floats, const torch::Tensor& codes,
                                     absl::string_view op) {
  absl::StatusOr<FloatKind> kind = float_kind_of(floats.scalar_type());
  if (!kind.ok()) return absl::InvalidArgumentError(absl::StrCat(op, ": ", kind.status().message()));
  if (!floats.is_contiguous() || !codes.is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": tensors must be contiguous"));
  }
  if (codes.scalar_type() != torch::kUInt8) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": codes have dtype ", c10::toString(codes.scalar_type()), ", expected Byte"));
  }
  if (floats.numel() != codes.numel()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", floats.numel(),
                                                   " values but ", codes.numel(), " codes"));
  }
  if (floats.device() != codes.device()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": tensors on ", floats.device().str(),
                                                   " and ", codes.device().str()));
  }
  if (floats.is_cuda() && !compat::kHaveCuda) {
    return absl::FailedPreconditionError(
        absl::StrCat(op, ": CUDA tensor, but this build has no CUDA kernels"));
  }
  if (!floats.is_cuda() && !floats.is_cpu()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": unsupported device ", floats.device().str()));
  }
  return kind;
}

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
cudaStream_t stream_for(const torch::Tensor& t, KernelStream stream) {
  void* s = stream.cuda_stream != nullptr ? stream.cuda_stream
                                          : compat::current_cuda_stream(t.device());
  return static_cast<cudaStream_t>(s);
}

absl::Status cuda_status(cudaError_t err, absl::string_view op) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(op, ": ", cudaGetErrorString(err)));
}
#endif

}  // namespace

absl::StatusOr<FloatKind> float_kind_of(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat32: return FloatKind::kF32;
    case torch::kBFloat16: return FloatKind::kBF16;
    case torch::kFloat16: return FloatKind::kF16;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "dtype is ", c10::toString(dtype), ", expected Float, BFloat16 or Half"));
  }
}

absl::Status fp8_encode(const torch::Tensor& src, Fp8Format format, float inv_scale,
                        torch::Tensor& codes, KernelStream stream) {
  // Named in profiles (tests/bench/profile_summary.py), as libtorch ops are.
  RECORD_FUNCTION("diffusiond::fp8_encode", c10::ArrayRef<const c10::IValue>{});
  const absl::StatusOr<FloatKind> kind = check_pair(src, codes, "fp8_encode");
  if (!kind.ok()) return kind.status();
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (src.is_cuda()) {
    return cuda_status(fp8_encode_cuda(src.data_ptr(), *kind, src.numel(), format, inv_scale,
                                       codes.data_ptr<uint8_t>(), stream_for(src, stream)),
                       "fp8_encode");
  }
#endif
  fp8_encode_cpu(src.data_ptr(), *kind, src.numel(), format, inv_scale, codes.data_ptr<uint8_t>());
  return absl::OkStatus();
}

absl::Status fp8_quantize(const torch::Tensor& src, Fp8Format format, float min_scale, torch::Tensor& codes,
                          torch::Tensor& scale, KernelStream stream) {
  RECORD_FUNCTION("diffusiond::fp8_quantize", c10::ArrayRef<const c10::IValue>{});
  const absl::StatusOr<FloatKind> kind = check_pair(src, codes, "fp8_quantize");
  if (!kind.ok()) return kind.status();
  if (!(min_scale > 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("fp8_quantize: min_scale ", min_scale, " is not > 0"));
  }
  if (scale.scalar_type() != torch::kFloat32 || scale.numel() != 1 || scale.device() != src.device()) {
    return absl::InvalidArgumentError(absl::StrCat("fp8_quantize: scale must be one float32 on ", src.device().str()));
  }
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (src.is_cuda()) {
    return cuda_status(fp8_quantize_cuda(src.data_ptr(), *kind, src.numel(), format, min_scale, scale.data_ptr<float>(),
                                         codes.data_ptr<uint8_t>(), stream_for(src, stream)),
                       "fp8_quantize");
  }
#endif
  scale.fill_(fp8_quantize_cpu(src.data_ptr(), *kind, src.numel(), format, min_scale, codes.data_ptr<uint8_t>()));
  return absl::OkStatus();
}

absl::Status fp8_decode(const torch::Tensor& codes, Fp8Format format, float scale,
                        torch::Tensor& dst, KernelStream stream) {
  RECORD_FUNCTION("diffusiond::fp8_decode", c10::ArrayRef<const c10::IValue>{});
  const absl::StatusOr<FloatKind> kind = check_pair(dst, codes, "fp8_decode");
  if (!kind.ok()) return kind.status();
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (dst.is_cuda()) {
    return cuda_status(fp8_decode_cuda(codes.data_ptr<uint8_t>(), codes.numel(), format, scale,
                                       *kind, dst.data_ptr(), stream_for(dst, stream)),
                       "fp8_decode");
  }
#endif
  fp8_decode_cpu(codes.data_ptr<uint8_t>(), codes.numel(), format, scale, *kind, dst.data_ptr());
  return absl::OkStatus();
}

}  // namespace diffusiond
