// bfloat16 products on the CPU through oneDNN, called directly: the linear
// layers and attention of a bf16 forward.
//
// libtorch 1.13 sends a 2-D bf16 mm to oneDNN but reorders the weight into a
// fresh buffer each call, sends a batched one (bmm) to a generic loop at about
// a quarter of the speed, and has no attention of its own. Here both run on
// the CPU's native bf16 instructions (AVX512-BF16, AMX), accumulating in
// float32; attention's scores and softmax stay float32.
//
// oneDNN is the library libtorch itself links (Debian's libdnnl 2.6), so the
// two share one copy and one OpenMP thread pool: a call uses the threads the
// calling thread's at::get_num_threads() allows. A build without oneDNN's
// headers (a CUDA libtorch wheel) compiles onednn_absent.cc instead, where
// have_onednn_bf16() is false.
#ifndef DIFFUSIOND_KERNELS_ONEDNN_CPU_H_
#define DIFFUSIOND_KERNELS_ONEDNN_CPU_H_

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace diffusiond {

// True when this build has oneDNN and the CPU multiplies bf16 natively
// (oneDNN's effective ISA is AVX512-BF16 or AMX; ONEDNN_MAX_CPU_ISA can lower
// it). Elsewhere oneDNN would emulate bf16 or take its reference kernels,
// slower than widening to float32.
bool have_onednn_bf16();

// The oneDNN version, ISA and the kernel a bf16 matmul gets, for logs:
// "oneDNN 2.6.3, avx512_core_bf16, bf16 matmul brg:avx512_core_bf16", or ""
// without oneDNN.
std::string onednn_description();

// x Wᵀ + b at bf16, accumulated in float32 and rounded once, as
// torch::linear:
//   x [..., K] bf16 on the CPU; weight [N, K] bf16 with unit stride along K
//   (a contiguous weight, or rows of a fused one); bias [N] or undefined.
// Returns [..., N] bf16. The weight is read where it lies: oneDNN blocks it
// into its own scratchpad, which it keeps between calls. libtorch 1.13's bf16
// linear reorders the weight into a fresh buffer on every call, which under
// the daemon's allocator (weights over 8 MiB come back as new pages) halves
// its speed. REQUIRES: have_onednn_bf16().
torch::Tensor onednn_bf16_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// Packing: a bf16 weight [N, K] rewritten, in its own bytes, in the blocked
// layout oneDNN's matmul reads on this CPU (the same for any number of input
// rows), so that no call blocks it again: 11% faster at 1152 rows on two
// threads, 26% at 455 (docs/benchmarks.md). The tensor keeps its shape and
// dtype; only onednn_bf16_linear_packed and onednn_unpack_bf16_weight may
// read it afterwards.
//
// Packs `weight` in place and returns true; returns false, changing
// nothing, unless it is a contiguous bf16 [N, K] CPU tensor whose blocked
// layout takes exactly N·K elements. REQUIRES: have_onednn_bf16().
bool onednn_pack_bf16_weight(const torch::Tensor& weight);
// The plain [N, K] weight of a packed one, in a fresh tensor.
torch::Tensor onednn_unpack_bf16_weight(const torch::Tensor& packed);
// The same for the uint8 codes of an [N, K] FP8 weight: they are put in the
// element order of the bf16 blocked layout. The layout is a permutation of
// the elements and an FP8 decode goes element by element, so the decode of
// packed codes is the packed bf16 weight, with no reorder per forward.
bool onednn_pack_fp8_codes(const torch::Tensor& codes);
torch::Tensor onednn_unpack_fp8_codes(const torch::Tensor& packed_codes);
// onednn_bf16_linear on a weight packed by onednn_pack_bf16_weight.
torch::Tensor onednn_bf16_linear_packed(const torch::Tensor& x, const torch::Tensor& packed, const torch::Tensor& bias);

// softmax(scale · q kᵀ + mask) v, per batch item and head, at bf16:
//   q [B, H, S, D], k [B, H, T, D], v [B, H, T, Dv], all bf16 on the CPU;
//   key_mask [B, T] bool (true = attend) or undefined.
// Queries go `chunk_rows` at a time; for each chunk the scores are float32
// [chunk_rows, T] (4 bytes each), and oneDNN's softmax writes the
// probabilities beside them rounded to bf16 (2 bytes each):
// attention_scratch_bytes in core/models/common counts both. Returns
// [B, H, S, Dv] bf16. A query whose keys are all masked gives NaN, as the
// float32 kernel does. REQUIRES: have_onednn_bf16().
torch::Tensor onednn_bf16_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& key_mask, double scale, int64_t chunk_rows);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_ONEDNN_CPU_H_
