// Scaled dot-product attention whose activation memory does not grow with
// sequence²: queries are processed in chunks sized so that one chunk's
// score matrix stays under a byte limit. With libtorch >= 2.0 the native
// scaled_dot_product_attention kernel is used instead.
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_ATTENTION_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_ATTENTION_H_

#include <torch/types.h>

#include <cstdint>

namespace diffusiond {

struct AttentionOptions {
  // Upper bound for one chunk's scores (batch × heads × chunk × keys ×
  // element size). Default 64 MiB.
  int64_t max_scores_bytes = int64_t{64} << 20;
  // The float32 CPU path's chunk target: scores this size stay in the
  // cache between the two products and the softmax. Default 2 MiB.
  int64_t cache_scores_bytes = int64_t{2} << 20;
  // Use the native kernel when the libtorch build has it. Default true.
  bool prefer_native = true;
};

// q, k, v: [batch, heads, seq, head_dim]. key_mask: [batch, keys] bool, true
// where a key may be attended to, or undefined for none. Softmax scale is
// 1/sqrt(head_dim). Returns [batch, heads, seq, head_dim] in q's dtype;
// softmax runs in float32 for reduced-precision inputs.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& key_mask, const AttentionOptions& options = {});

// Whether key_mask is defined and true for every key: in effect no mask.
// Reads the mask: for a device tensor, a wait for its queue.
bool admits_every_key(const torch::Tensor& key_mask);

// key_mask, or an undefined tensor when it is on the host and admits every
// key. A model calls it on a mask it was given before moving its inputs to
// a device: there a mask keeps SDPA off its flash kernel, and attention()
// cannot ask admits_every_key without that wait. Upstream's pipelines drop
// such a mask too (Qwen-Image's `prompt_embeds_mask.all()`).
torch::Tensor without_host_mask_admitting_every_key(const torch::Tensor& key_mask);

// The shape of one attention() call, for sizing it before it runs.
struct AttentionShape {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t queries = 0;
  int64_t keys = 0;
  int64_t head_dim = 0;
};

// Returns the peak bytes attention() allocates for contiguous q, k, v of
// `shape` and `dtype` beyond those inputs and the output it returns, on the
// path it takes there: native SDPA (libtorch >= 2 and prefer_native; its
// per-row softmax statistics, assuming a fused kernel and not the math
// fallback that holds every score), the float32 CPU kernel (one
// cache-sized score chunk; for bfloat16, which it takes widened, the
// float32 q, k, v and output too), or the generic chunked path (a score chunk of
// at most max_scores_bytes in float32 beside its `dtype` copy, and the
// per-chunk outputs before they are joined).
int64_t attention_scratch_bytes(const AttentionShape& shape, torch::ScalarType dtype, bool device_is_cpu,
                                const AttentionOptions& options);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_ATTENTION_H_
