// The self-attention pieces of Qwen's text towers (Qwen3, the language
// towers of Qwen2.5-VL and Qwen3-VL), as transformers computes them:
// rotary tables for per-token positions with the VL models' multimodal
// row choice (M-RoPE), half-split RoPE (rotate_half, not interleaved
// pairs), the causal-plus-padding mask, and grouped-query attention over
// that full mask.
//
// Not here: the projections, norms and the layer (qwen_text_tower.h).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_QWEN_ATTENTION_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_QWEN_ATTENTION_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <utility>

namespace diffusiond {

// Which position row (0: temporal, 1: height, 2: width) turns each of the
// head_dim / 2 frequencies. The VL towers carry three rows of positions
// per token; for text the three are equal, so every layout is then plain
// 1-D RoPE over those positions.
struct MropeLayout {
  // Frequencies per row; all zero: every frequency uses row 0 (plain RoPE,
  // Qwen3). Otherwise they sum to head_dim / 2.
  std::array<int64_t, 3> sections = {0, 0, 0};
  // Qwen3-VL's interleaved layout (frequency j uses row 1 when j % 3 == 1
  // and j < 3 * sections[1], row 2 when j % 3 == 2 and j < 3 *
  // sections[2], else row 0); otherwise Qwen2.5-VL's chunks (the first
  // sections[0] frequencies from row 0, the next sections[1] from row 1,
  // the rest from row 2).
  bool interleaved = false;
};

// Returns the row each of the head_dim / 2 frequencies takes, [head_dim /
// 2] int64. REQUIRES: head_dim even; sections all zero or summing to
// head_dim / 2.
torch::Tensor mrope_rows(int64_t head_dim, const MropeLayout& layout);

// Returns cos and sin, each [B, L, head_dim] float32 on the CPU, for
// `positions` int64 [3, B, L] (rows as above) or [B, L] (every row the
// same): inv_freq_j = 1 / theta^(2j / head_dim) in float32, the angle of
// frequency j the float32 product of inv_freq_j and its row's position, the
// half repeated — upstream's rotary embedding, computed where the reference
// computed it. REQUIRES: as mrope_rows; positions on the CPU.
std::pair<torch::Tensor, torch::Tensor> qwen_rope_tables(double theta, int64_t head_dim, const torch::Tensor& positions,
                                                         const MropeLayout& layout);

// Returns x * cos + rotate_half(x) * sin for x [B, heads, L, head_dim],
// rotate_half(x) = [-x2, x1] over the halves of head_dim. cos/sin
// ([B, 1, L, head_dim], or anything that broadcasts so) are cast to x's
// dtype first, as upstream does.
torch::Tensor apply_half_split_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// Returns which keys each query may see, [batch, seq, seq] bool: causal
// and, when `key_mask` ([batch, seq] bool, true = token) is defined, only
// token keys. A query that would see no key at all sees every key: what
// transformers' SDPA mask does on torch < 2.5 (it is where the reference
// ran), and a row the pipeline drops anyway. Made on `device`, where
// `key_mask` is too.
torch::Tensor qwen_attention_mask(const torch::Tensor& key_mask, int64_t batch, int64_t seq,
                                  torch::Device device = torch::kCPU);

// softmax(q kᵀ / sqrt(head_dim), masked by `allowed`) v with q [batch,
// heads, seq, head_dim] and k, v [batch, kv_heads, seq, head_dim]; q head h
// reads kv head h / (heads / kv_heads). Scores and softmax in float32; the
// result [batch, heads, seq, head_dim] in q's dtype. One batch item's
// scores exist at a time.
torch::Tensor grouped_query_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& allowed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_QWEN_ATTENTION_H_
