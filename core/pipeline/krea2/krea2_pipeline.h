// Krea 2's pipeline recipe (diffusers' Krea2Pipeline): the Qwen3-VL text
// encoder, asked for a stack of hidden states tapped from several of its
// layers (text_encoder_select_layers, from the pipeline folder's
// model_index.json or upstream's default) for the prompt in Qwen-Image's
// template (qwen_image_prompt.h) → the Krea 2 transformer, with
// classifier-free guidance → Qwen-Image's VAE (core/models/wan_vae/).
//
// Upstream pads between the prompt and the template's 5-token suffix, with
// positions counting real tokens only (cumsum(mask) - 1), and cuts the
// prefixed prompt alone at max_sequence_length + 34 - 5 tokens before the
// suffix. Here the prompt is cut the same way and the suffix appended after
// it (TextEncoding::suffix), unpadded: padding takes no position and is
// never attended (the transformer masks it out as a key, and its own rows
// are dropped with the transformer's text stream), so the real tokens'
// rows are upstream's.
//
// The pipeline's is_distilled (model_index.json) is read where it acts, by
// the transformer's recipe (core/models/krea2/krea2_family.cc): it fixes
// the schedule's mu, which a Denoise of that transformer needs outside any
// Generate too.
#ifndef DIFFUSIOND_CORE_PIPELINE_KREA2_KREA2_PIPELINE_H_
#define DIFFUSIOND_CORE_PIPELINE_KREA2_KREA2_PIPELINE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// Krea2Pipeline's max_sequence_length default: text rows after the
// template's prefix is dropped.
inline constexpr int64_t kKrea2MaxSequenceLength = 512;
// The pipeline's default text_encoder_select_layers: indices into the
// encoder's hidden states (0: the embeddings) stacked per token, for
// Qwen3-VL-4B's 36 layers.
inline constexpr std::array<int64_t, 12> kKrea2TextEncoderLayers = {2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35};

// The tokens of the template's tail, which upstream keeps after the cut
// (prompt_template_encode_num_suffix_tokens).
inline constexpr int64_t kKrea2PromptSuffixTokens = 5;

// How Krea2Pipeline asks its encoder for `prompt` at `max_sequence_length`
// rows, tapping `layers` (hidden-state indices, 0 the embeddings): the
// prefixed prompt cut at max_sequence_length + 34 - 5 tokens, the suffix
// after it.
TextEncoding krea2_text_encoding(const std::string& prompt, int64_t max_sequence_length,
                                 std::vector<int64_t> layers);

// Lives for the process.
const PipelineFamily* krea2_pipeline();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_KREA2_KREA2_PIPELINE_H_
