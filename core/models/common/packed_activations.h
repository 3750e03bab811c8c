// The pieces of a working-memory estimate (activation_estimate.h) that the
// 2x2-packed joint-attention transformers (FLUX, Krea 2, Qwen-Image) share:
// the token and batch counts a query implies, the tally's title, the joint
// sequence's attention scratch, and picking a block's peak.
//
// Not here: each model's own terms, which stay beside its forward's code
// (*_activations.cc).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_PACKED_ACTIVATIONS_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_PACKED_ACTIVATIONS_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/models/activation_estimate.h"
#include "core/models/common/attention.h"

namespace diffusiond {

// What an ActivationQuery implies for one forward of a packed model.
struct PackedActivationSizes {
  int64_t image = 0;     // image tokens: 2x2 patches of [C, H, W], or a Step item's [S, in_channels] rows
  int64_t text = 0;      // text tokens: the query's longest text, unpadded
  int64_t latent = 0;    // elements of one item's latents
  int64_t calls = 1;     // items: separate forwards in a Denoise, a Step's batch otherwise
  double batch = 1;      // items per forward
  double element = 0;    // bytes of one compute-dtype element
};

// Returns the sizes `q` implies; zero tokens for a latent shape of another rank.
PackedActivationSizes packed_activation_sizes(const ActivationQuery& q);

// Returns the tally's title: "<model> at <dtype>, [N forwards of ]batch B x
// T tokens (S image + L text) x dim <dim>".
std::string packed_activation_title(absl::string_view model, const ActivationQuery& q,
                                    const PackedActivationSizes& sizes, int64_t dim);

// Returns the attention scratch, in bytes, of one forward's joint
// [image | text] sequence.
double joint_attention_scratch_bytes(const ActivationQuery& q, const PackedActivationSizes& sizes, int64_t heads,
                                     int64_t head_dim, const AttentionOptions& attention);

// Adds to `tally` the largest weight decoded or converted for one Linear
// and the outputs: `out_features` per image token at the compute dtype and
// in float32.
void add_decode_and_outputs(const PackedActivationSizes& sizes, int64_t out_features,
                            int64_t materialized_weight_bytes, ActivationTally* tally);

// Adds to `tally` a Denoise's float32 latent-sized tensors: `copies` of the
// loop's own plus one prediction per forward.
void add_denoise_loop(const PackedActivationSizes& sizes, int copies, ActivationTally* tally);

// Returns the largest of `peaks` (bytes, what), the first of equals.
// REQUIRES: peaks is not empty.
std::pair<double, std::string> largest_activation_peak(absl::Span<const std::pair<double, std::string>> peaks);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_PACKED_ACTIVATIONS_H_
