// CosmosModel: a port of diffusers' CosmosTransformer3DModel forward as
// Anima configures it (Cosmos-Predict2 2B text-to-image): the padding mask
// resized to the latents and concatenated as the last input channel, a
// channel-first patch embedding (Linear, no bias), the time embedding of
// the raw sigma (temb through an MLP, and the sinusoid itself RMS-normed
// into the AdaLN-LoRA modulations), blocks of modulated self-attention
// with 3-D RoPE, modulated cross-attention to the (unmasked, zero-padded)
// text context and a modulated GELU FFN, the modulated final layer, and a
// channel-last unpatchify (not the inverse of the patchify).
//
// Not here: the named-tensor Step and the denoise predictor
// (cosmos_step.cc), the working-memory estimate (cosmos_activations.cc),
// the RoPE tables (cosmos_rope.h), the config (cosmos_config.h).
#ifndef DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_MODEL_H_

#include <torch/types.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/common/configured_denoiser.h"
#include "core/models/cosmos/cosmos_config.h"
#include "core/models/cosmos/cosmos_rope.h"
#include "core/models/diffusion_model.h"

namespace diffusiond {

inline constexpr absl::string_view kCosmosArchitecture = "cosmos";

// Intermediates of the first batch item, for parity checks; filled only when
// a forward is given one.
struct CosmosIntermediates {
  torch::Tensor t_sinusoid;          // [hidden] float32, [cos | sin] of the raw sigma
  torch::Tensor embedded_timestep;   // [hidden] time_embed.norm of the sinusoid
  torch::Tensor temb;                // [3 * hidden]
  torch::Tensor patch_embed_in;      // [C + 1, T, H, W] the latents with the resized mask last
  torch::Tensor patch_embed;         // [S, hidden], tokens (t, h, w) row-major
  torch::Tensor rope_cos, rope_sin;  // [S, head_dim] float32
  torch::Tensor block0_norm1;        // [S, hidden] the first block's modulated norm
  torch::Tensor block0_gate1;        // [1, hidden] its gate
  torch::Tensor block0_attn1;        // [S, hidden] its self-attention output
  torch::Tensor block0_attn2;        // [S, hidden] its cross-attention output
  std::vector<torch::Tensor> blocks;  // each block's output [S, hidden]
  torch::Tensor norm_out;            // [S, hidden] the final modulated norm
  torch::Tensor proj_out;            // [S, patch volume * C_out] before unpatchify
};

// Thread-safe for concurrent forwards.
class CosmosModel final : public ConfiguredDenoiser<CosmosConfig> {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`.
  // FAILED_PRECONDITION naming the first missing, misshapen or unexpected
  // tensor. `schedule` is the default schedule.
  static absl::StatusOr<std::unique_ptr<CosmosModel>> create(
      const CosmosConfig& config, std::unique_ptr<WeightStore> weights,
      const ScheduleOptions& schedule = cosmos_default_schedule());

  absl::string_view architecture() const override { return kCosmosArchitecture; }

  // Named inputs (docs/api.md): "hidden_states" [B, C, T, H, W],
  // "timestep" [B] (sigma in [0, 1]), "encoder_hidden_states" [B, L,
  // text_embed_dim], optionally "padding_mask" [1, 1, Hp, Wp] (default
  // zeros, as AnimaPipeline passes). Output "out" [B, C_out, T, H, W].
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // Anima predicts the velocity noise − x0 at sigma (timestep / 1000).
  FlowConvention flow_convention() const override { return {1.0f, ModelTime::kSigma}; }
  // Images [C, H, W]; sides multiples of the patch, at most
  // kCosmosMaxPositions tokens.
  LatentLayout latent_layout() const override {
    return {config_.in_channels, std::max(config_.patch_size[1], config_.patch_size[2]),
            kCosmosMaxPositions * std::min(config_.patch_size[1], config_.patch_size[2]), 0};
  }
  ScheduleOptions default_schedule(const std::vector<int64_t>&) const override { return schedule_; }
  // "encoder_hidden_states" [L, text_embed_dim]: the text conditioner's
  // output, every row (its zero padding to 512 is attended).
  std::vector<ConditioningInput> conditioning_inputs() const override;
  bool supports_negative() const override { return true; }
  std::vector<std::string> block_containers() const override { return {"transformer_blocks"}; }
  // Latents [C, H, W] (T = 1), the padding mask zero. A guided step is one
  // batched call when both texts have one length, else two calls (cond,
  // then uncond, as the pipeline).
  absl::StatusOr<FlowPredictor> flow_predictor(const Conditioning& positive,
                                               const Conditioning* negative) const override;
  std::optional<ActivationQuery> step_activation_query(const NamedTensors& inputs) const override;

  // One forward, upstream's call convention: hidden_states [B, C, T, H, W]
  // (sides multiples of the patch), timestep [B] (sigma, not * 1000),
  // encoder_hidden_states [B, L, text_embed_dim] (no mask), padding_mask
  // [1, 1, Hp, Wp] or undefined (zeros). Inputs of any float dtype go to
  // compute_dtype(*this); returns [B, C_out, T, H, W] at the compute dtype.
  // INVALID_ARGUMENT for inconsistent inputs; INTERNAL or
  // RESOURCE_EXHAUSTED if libtorch fails. `debug`, when given, receives the
  // first item's intermediates.
  absl::StatusOr<torch::Tensor> forward(const torch::Tensor& hidden_states, const torch::Tensor& timestep,
                                        const torch::Tensor& encoder_hidden_states,
                                        const torch::Tensor& padding_mask = {},
                                        CosmosIntermediates* debug = nullptr) const;

 private:
  using ConfiguredDenoiser::ConfiguredDenoiser;

  absl::Status check_inputs(const torch::Tensor& x, const torch::Tensor& t, const torch::Tensor& text,
                            const torch::Tensor& padding_mask) const;
  torch::Tensor run(const torch::Tensor& x, const torch::Tensor& t, const torch::Tensor& text,
                    const torch::Tensor& padding_mask, CosmosIntermediates* debug) const;
  torch::Tensor linear(const torch::Tensor& x, const std::string& prefix) const;
  // The AdaLN-LoRA modulation `prefix`.linear_2(linear_1(silu_emb)), [B,
  // chunks * hidden].
  torch::Tensor modulation(const std::string& prefix, const torch::Tensor& silu_emb) const;
  torch::Tensor block(const std::string& prefix, torch::Tensor x, const torch::Tensor& text,
                      const torch::Tensor& silu_emb, const torch::Tensor& temb, const torch::Tensor& cos,
                      const torch::Tensor& sin, CosmosIntermediates* debug) const;
  // q/k/v projections, per-head RMSNorm, RoPE (self-attention: cos
  // defined), attention without a mask, to_out.0.
  torch::Tensor attention_block(const std::string& prefix, const torch::Tensor& h, const torch::Tensor& context,
                                const torch::Tensor& cos, const torch::Tensor& sin) const;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_MODEL_H_
