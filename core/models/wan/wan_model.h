// WanModel: a port of diffusers' WanTransformer3DModel forward (Wan 2.1 /
// 2.2 text-to-video): Conv3d patch embedding over 5-D latents, the time and
// text embedders, blocks of modulated self-attention with 3-axis RoPE,
// unmodulated cross-attention to the (zero-padded, unmasked) text and a
// modulated FFN, the final layer modulated by the raw temb, and unpatchify.
//
// Not here: the named-tensor Step and the denoise predictor (wan_step.cc),
// the working-memory estimate (wan_activations.cc), the config (wan_config.h).
#ifndef DIFFUSIOND_CORE_MODELS_WAN_WAN_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_WAN_WAN_MODEL_H_

#include <torch/types.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/common/attention.h"
#include "core/models/common/configured_denoiser.h"
#include "core/models/common/layers.h"
#include "core/models/diffusion_model.h"
#include "core/models/wan/wan_config.h"

namespace diffusiond {

inline constexpr absl::string_view kWanArchitecture = "wan";

// What WanPipeline pads the text features to (max_sequence_length): the zero
// rows are ordinary keys of cross-attention, so their count changes results.
inline constexpr int64_t kWanDefaultTextLength = 512;

// Intermediates of the first batch item, for parity checks; filled only when
// a forward is given one.
struct WanIntermediates {
  torch::Tensor t_sinusoid;           // [freq_dim] float32
  torch::Tensor temb;                 // [inner]
  torch::Tensor timestep_proj;        // [6 * inner]
  torch::Tensor text_embed;           // [L, inner]
  torch::Tensor patch_embed;          // [S, inner], tokens (f, h, w) row-major
  torch::Tensor rope_cos, rope_sin;   // [S, head_dim / 2] float32 (one value per pair)
  std::vector<torch::Tensor> blocks;  // each block's output [S, inner]
  torch::Tensor norm_out;             // the final LayerNorm before modulation [S, inner]
};

// Thread-safe for concurrent forwards.
class WanModel final : public ConfiguredDenoiser<WanConfig> {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`.
  // FAILED_PRECONDITION naming the first missing, misshapen or unexpected
  // tensor. `schedule` is the default schedule.
  static absl::StatusOr<std::unique_ptr<WanModel>> create(const WanConfig& config, std::unique_ptr<WeightStore> weights,
                                                          const ScheduleOptions& schedule = wan_default_schedule());

  absl::string_view architecture() const override { return kWanArchitecture; }

  // Named inputs (docs/api.md): "hidden_states" [B, C, F, H, W], "timestep"
  // [B] on the 0..1000 scale, "encoder_hidden_states" [B, L, text_dim].
  // Output "out" [B, C_out, F, H, W].
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // Wan predicts the velocity noise − x0 and takes the scheduler's timestep.
  FlowConvention flow_convention() const override { return {1.0f, ModelTime::kTimestep}; }
  // [C, H, W] per frame; the predictor also takes [C, F, H, W] video latents.
  LatentLayout latent_layout() const override {
    const int64_t side = std::max(config_.patch_size[1], config_.patch_size[2]);
    return {config_.in_channels, side,
            config_.rope_max_seq_len * std::min(config_.patch_size[1], config_.patch_size[2]),
            config_.rope_max_seq_len * config_.patch_size[0]};
  }
  ScheduleOptions default_schedule(const std::vector<int64_t>&) const override { return schedule_; }
  // "encoder_hidden_states" [L, text_dim] (UMT5's last hidden states of the
  // valid tokens), and the scalar "max_sequence_length" the predictor
  // zero-pads them to (default 512, as WanPipeline).
  std::vector<ConditioningInput> conditioning_inputs() const override;
  bool supports_negative() const override { return true; }
  std::vector<std::string> block_containers() const override { return {"blocks"}; }
  // Latents [C, F, H, W] (or [C, H, W], one frame); a guided step is one
  // batched call of the positive and the negative text.
  absl::StatusOr<FlowPredictor> flow_predictor(const Conditioning& positive,
                                               const Conditioning* negative) const override;
  std::optional<ActivationQuery> step_activation_query(const NamedTensors& inputs) const override;

  // One forward, upstream's call convention: hidden_states [B, C, F, H, W]
  // with F, H, W multiples of the patch, timestep [B] (0..1000, not divided),
  // encoder_hidden_states [B, L, text_dim] (no mask). Inputs of any float
  // dtype go to compute_dtype(*this); returns [B, C_out, F, H, W] at the
  // compute dtype. INVALID_ARGUMENT for inconsistent inputs; INTERNAL or
  // RESOURCE_EXHAUSTED if libtorch fails. `debug`, when given, receives the
  // first item's intermediates.
  absl::StatusOr<torch::Tensor> forward(const torch::Tensor& hidden_states, const torch::Tensor& timestep,
                                        const torch::Tensor& encoder_hidden_states,
                                        WanIntermediates* debug = nullptr) const;

 private:
  WanModel(const WanConfig& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule);

  absl::Status check_inputs(const torch::Tensor& x, const torch::Tensor& t, const torch::Tensor& text) const;
  torch::Tensor run(const torch::Tensor& x, const torch::Tensor& t, const torch::Tensor& text,
                    WanIntermediates* debug) const;
  torch::Tensor linear(const torch::Tensor& x, const std::string& prefix) const;
  // cos/sin [B, S, head_dim / 2] for the token grid f x h x w.
  std::pair<torch::Tensor, torch::Tensor> rope_for(int64_t batch, int64_t f, int64_t h, int64_t w,
                                                   torch::Device device) const;
  torch::Tensor block(const std::string& prefix, torch::Tensor x, const torch::Tensor& text,
                      const torch::Tensor& timestep_proj, const torch::Tensor& cos, const torch::Tensor& sin) const;
  // q/k/v projections, RMSNorm across all heads, split, RoPE (when cos is
  // defined), attention, to_out.
  torch::Tensor attention_block(const std::string& prefix, const torch::Tensor& h, const torch::Tensor& context,
                                const torch::Tensor& cos, const torch::Tensor& sin) const;

  // Per axis (t, h, w): [rope_max_seq_len, d / 2] float32 cos and sin.
  std::vector<torch::Tensor> rope_cos_, rope_sin_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_WAN_MODEL_H_
