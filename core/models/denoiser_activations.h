// The working memory of one denoiser call (activation_estimate.h), from the
// config alone, so it can be asked before a model is loaded (a recipe's
// least_call_bytes) and is what each model's estimate_activations answers.
// One overload per architecture, each defined beside its forward
// (<arch>/<arch>_activations.cc, which lists what is counted).
//
// Not here: the configs themselves (<arch>/<arch>_config.h; declared here
// only by name, so this header stays light).
#ifndef DIFFUSIOND_CORE_MODELS_DENOISER_ACTIVATIONS_H_
#define DIFFUSIOND_CORE_MODELS_DENOISER_ACTIVATIONS_H_

#include <cstdint>

#include "core/models/activation_estimate.h"
#include "core/models/common/attention.h"

namespace diffusiond {

struct CosmosConfig;
struct FluxConfig;
struct Krea2Config;
struct QwenImageConfig;
struct WanConfig;
struct ZImageConfig;

// Each returns the peak bytes of one call of `query` with `config` and
// `attention`, where `materialized_weight_bytes` is the largest weight a
// forward decodes or converts (largest_materialized_weight_bytes).
//
// Cosmos (Anima): query.latent_shape is [C, H, W] or a Step's item [C, T,
// H, W]; the text is every row of the conditioning (the conditioner's 512).
ActivationEstimate denoiser_activations(const CosmosConfig& config, const ActivationQuery& query,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes);
// FLUX, Krea 2, Qwen-Image: query.latent_shape is unpacked [C, H, W] or a
// Step's item [S, in_channels]. A guided FLUX Denoise (batch 2) runs two
// forwards of one item.
ActivationEstimate denoiser_activations(const FluxConfig& config, const ActivationQuery& query,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes);
ActivationEstimate denoiser_activations(const Krea2Config& config, const ActivationQuery& query,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes);
ActivationEstimate denoiser_activations(const QwenImageConfig& config, const ActivationQuery& query,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes);
// Wan: query.latent_shape is [C, H, W] (one frame) or [C, F, H, W] (a
// Denoise's video latents or a Step's item). In a Denoise the text is padded
// to at least kWanDefaultTextLength rows, as the predictor pads it.
ActivationEstimate denoiser_activations(const WanConfig& config, const ActivationQuery& query,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes);
// Z-Image: query.latent_shape is [C, H, W] or a Step's item [C, F, H, W];
// the caption is padded as the forward pads it (to multiples of 32).
ActivationEstimate denoiser_activations(const ZImageConfig& config, const ActivationQuery& query,
                                        const AttentionOptions& attention, int64_t materialized_weight_bytes);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_DENOISER_ACTIVATIONS_H_
