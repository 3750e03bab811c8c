// kernels/onednn_cpu.h in a build without oneDNN's headers (a CUDA libtorch
// wheel, which carries its own oneDNN inside and no headers for it): the
// callers take their float32 kernels instead.
#include "kernels/onednn_cpu.h"

namespace diffusiond {

bool have_onednn_bf16() { return false; }

std::string onednn_description() { return ""; }

torch::Tensor onednn_bf16_linear(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) {
  TORCH_CHECK(false, "onednn_bf16_linear: this build has no oneDNN");
}

bool onednn_pack_bf16_weight(const torch::Tensor&) { return false; }

bool onednn_pack_fp8_codes(const torch::Tensor&) { return false; }

torch::Tensor onednn_unpack_fp8_codes(const torch::Tensor&) {
  TORCH_CHECK(false, "onednn_unpack_fp8_codes: this build has no oneDNN");
}

torch::Tensor onednn_unpack_bf16_weight(const torch::Tensor&) {
  TORCH_CHECK(false, "onednn_unpack_bf16_weight: this build has no oneDNN");
}

torch::Tensor onednn_bf16_linear_packed(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) {
  TORCH_CHECK(false, "onednn_bf16_linear_packed: this build has no oneDNN");
}

torch::Tensor onednn_bf16_attention(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                    const torch::Tensor&, double, int64_t) {
  TORCH_CHECK(false, "onednn_bf16_attention: this build has no oneDNN");
}

}  // namespace diffusiond
