// Krea 2's pipeline recipe (diffusers' Krea2Pipeline): the Qwen3-VL text
// encoder, asked for a stack of hidden states tapped from several of its
// layers for the prompt in Qwen-Image's template (qwen_image_prompt.h) → the
// Krea 2 transformer, with classifier-free guidance → Qwen-Image's VAE.
//
// The encoder is not ported yet (unported_architectures.h): Generate
// refuses the pipeline naming it, and EncodePrompt serves the
// family only once a Qwen3-VL encoder can be loaded. Two things wait for
// that port:
//   - TextEncoding names one hidden state, so the request names the last
//     tap (kKrea2TextEncoderLayers); the port must give the whole stack
//     [L, taps, D], which encoder_conditioning checks for;
//   - upstream pads between the prompt and the template's 5-token suffix
//     (positions counting real tokens only) and truncates the prompt alone.
//     Padding is never attended and takes no position, so the unpadded
//     template gives the same rows; only a prompt over 507 tokens differs,
//     losing its suffix here where upstream keeps it.
//
// The pipeline's is_distilled (model_index.json) is read where it acts, by
// the transformer's recipe (core/models/krea2/krea2_family.cc): it fixes
// the schedule's mu, which a Denoise of that transformer needs outside any
// Generate too.
#ifndef DIFFUSIOND_CORE_PIPELINE_KREA2_KREA2_PIPELINE_H_
#define DIFFUSIOND_CORE_PIPELINE_KREA2_KREA2_PIPELINE_H_

#include <array>
#include <cstdint>

#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// Krea2Pipeline's max_sequence_length default: text rows after the
// template's prefix is dropped.
inline constexpr int64_t kKrea2MaxSequenceLength = 512;
// The pipeline's default text_encoder_select_layers: indices into the
// encoder's hidden states (0: the embeddings) stacked per token, for
// Qwen3-VL-4B's 36 layers.
inline constexpr std::array<int64_t, 12> kKrea2TextEncoderLayers = {2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35};

// Lives for the process.
const PipelineFamily* krea2_pipeline();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_KREA2_KREA2_PIPELINE_H_
