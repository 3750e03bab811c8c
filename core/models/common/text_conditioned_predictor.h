// The denoise-loop predictor of the text-conditioned transformers over
// 2x2-packed latents (Krea 2, Qwen-Image): each conditioning's text batched
// once, then per step the latents [C, H, W] packed as FLUX packs them
// (flux_latents.h), one forward per conditioning, cond then uncond, as the
// pipelines call the transformer (the prompts' lengths may differ), and the
// velocity unpacked.
//
// Not here: each model's inputs and forward (its *_predictor.cc builds them
// from the pieces given here), and the loop's guidance (denoise_loop.h).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_TEXT_CONDITIONED_PREDICTOR_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_TEXT_CONDITIONED_PREDICTOR_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/denoise/denoise_loop.h"
#include "core/denoise/flow_match_schedule.h"
#include "core/models/conditioning.h"

namespace diffusiond {

// The patch side of the 2x2 packing.
inline constexpr int64_t kTextConditionedPackedPatch = 2;

// One forward for one conditioning: its batched text, the packed latents
// [1, S, 4C], the timestep [1] float32 and the token grid's rows and cols;
// returns the packed output [1, S, 4C'].
using TextConditionedForward =
    std::function<absl::StatusOr<torch::Tensor>(const BatchedText& text, const torch::Tensor& packed,
                                                const torch::Tensor& timestep, int64_t rows, int64_t cols)>;

// Checks `positive` and `negative` (may be null) against `inputs`, batches
// their text inputs `states` and `mask`, and returns a predictor calling
// `forward` once per conditioning. INVALID_ARGUMENT for bad conditioning.
// The predictor returns INTERNAL when asked for a negative it was not
// given. `forward` must stay callable as long as the predictor.
absl::StatusOr<FlowPredictor> text_conditioned_flow_predictor(const std::vector<ConditioningInput>& inputs,
                                                              const Conditioning& positive,
                                                              const Conditioning* negative, const std::string& states,
                                                              const std::string& mask,
                                                              TextConditionedForward forward);

// Returns `schedule` with image_seq_len set to the 2x2-patch token count of
// an unpacked latent [C, H, W]; unchanged for another rank.
ScheduleOptions text_conditioned_schedule(ScheduleOptions schedule, const std::vector<int64_t>& latent_shape);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_TEXT_CONDITIONED_PREDICTOR_H_
