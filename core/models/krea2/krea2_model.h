// Krea2Model: a port of diffusers' Krea2Transformer2DModel forward (Krea 2)
// -- the text fusion stage (layerwise blocks across the tapped encoder
// layers of each token, a Linear collapsing that axis, masked refiner
// blocks across the tokens), the text projection, a single-stream stack of
// blocks over the joint [text | image] sequence with grouped-query,
// sigmoid-gated attention and Flux-style RoPE, and the final modulated
// RMSNorm layer -- over packed latents, as upstream's call takes them.
//
// Not here: packing latents (the 2x2 packing is FLUX's,
// core/models/flux/flux_latents.h), the RoPE tables and position ids
// (krea2_rope.h), key names (krea2_params.h).
#ifndef DIFFUSIOND_CORE_MODELS_KREA2_KREA2_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_KREA2_KREA2_MODEL_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/common/attention.h"
#include "core/models/common/configured_denoiser.h"
#include "core/models/diffusion_model.h"
#include "core/models/krea2/krea2_config.h"

namespace diffusiond {

inline constexpr absl::string_view kKrea2Architecture = "krea2";

// The inputs of one forward, named and shaped as upstream's call.
struct Krea2Inputs {
  torch::Tensor hidden_states;          // [B, S, in_channels] packed latents
  torch::Tensor encoder_hidden_states;  // [B, L, num_text_layers, text_hidden_dim]
  torch::Tensor timestep;               // [B], sigma in [0, 1] (the model scales by 1000)
  // [L + S, 3] (t, h, w) rotary coordinates shared by the batch, text rows
  // first (krea2_position_ids gives the pipeline's).
  torch::Tensor position_ids;
  torch::Tensor encoder_attention_mask;  // [B, L], nonzero = valid; undefined: all valid
};

// Thread-safe for concurrent forwards.
class Krea2Model final : public ConfiguredDenoiser<Krea2Config> {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`
  // with the right shapes. FAILED_PRECONDITION naming the first missing,
  // misshapen or unexpected tensor. `schedule` is the default schedule
  // (from the pipeline's scheduler_config.json when there is one).
  static absl::StatusOr<std::unique_ptr<Krea2Model>> create(const Krea2Config& config,
                                                            std::unique_ptr<WeightStore> weights,
                                                            const ScheduleOptions& schedule = krea2_default_schedule());

  absl::string_view architecture() const override { return kKrea2Architecture; }

  // Predicts the velocity noise - x0 at time sigma; plain guidance (the
  // pipeline's cond + g (cond - uncond) is the loop's scale s = 1 + g).
  FlowConvention flow_convention() const override;
  // Unpacked latents [in_channels / 4, H, W] with H and W even; up to 512
  // (a 4096-pixel side).
  LatentLayout latent_layout() const override;
  // The resolution-dependent schedule; mu comes from the packed token
  // count (H/2)(W/2) unless the schedule fixes it (is_distilled).
  ScheduleOptions default_schedule(const std::vector<int64_t>& latent_shape) const override;
  // "encoder_hidden_states" [L, num_text_layers, text_hidden_dim] (the
  // tapped Qwen3-VL hidden states per token) and optionally
  // "encoder_attention_mask" [L] (1 valid, 0 padding; padding may sit
  // anywhere, as the pipeline's template puts it mid-sequence).
  std::vector<ConditioningInput> conditioning_inputs() const override;
  bool supports_negative() const override { return true; }
  std::vector<std::string> block_containers() const override {
    return {"text_fusion.layerwise_blocks", "text_fusion.refiner_blocks", "transformer_blocks"};
  }
  absl::StatusOr<FlowPredictor> flow_predictor(const Conditioning& positive,
                                               const Conditioning* negative) const override;
  std::optional<ActivationQuery> step_activation_query(const NamedTensors& inputs) const override;

  // Named inputs as upstream's call: "hidden_states", "encoder_hidden_states",
  // "timestep", "position_ids" and optionally "encoder_attention_mask".
  // Output "out" [B, S, in_channels]. INVALID_ARGUMENT listing every
  // missing, unexpected or misshapen input.
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // One forward; float inputs of any dtype are converted to
  // compute_dtype(*this) (the RoPE tables stay float32). Returns [B, S,
  // in_channels] at the compute dtype. When `intermediates` is given, it
  // receives upstream's module outputs by the reference fixture's names
  // ("temb", "temb_mod", "text_projector", "text_fusion", "txt_in",
  // "img_in", "block<i>" (text rows first), "final_norm" (the RMSNorm before its modulation)), batched, and
  // "rope_cos" / "rope_sin" [L + S, head_dim / 2]. INVALID_ARGUMENT listing
  // every inconsistent input; INTERNAL or RESOURCE_EXHAUSTED if libtorch
  // fails.
  absl::StatusOr<torch::Tensor> forward(const Krea2Inputs& inputs, NamedTensors* intermediates = nullptr) const;

 private:
  // One attention's sizes and its RoPE rows ([B, seq, head_dim / 2] or
  // undefined: none).
  struct AttentionSpec {
    int64_t heads = 0, kv_heads = 0, head_dim = 0;
    torch::Tensor cos, sin;
  };

  Krea2Model(const Krea2Config& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule);

  absl::Status check_inputs(const Krea2Inputs& in) const;
  torch::Tensor run(const Krea2Inputs& in, NamedTensors* intermediates) const;
  torch::Tensor linear(const torch::Tensor& x, const std::string& module, bool bias) const;
  // Krea2RMSNorm: rms_norm in float32 with the zero-centred weight, 1 + w.
  torch::Tensor norm(const torch::Tensor& x, const std::string& module) const;
  // Per-head Krea2RMSNorm, RoPE when spec has it, to [B, heads, seq,
  // head_dim].
  torch::Tensor norm_rope(const torch::Tensor& x, const std::string& module, const AttentionSpec& spec) const;
  // Krea2Attention over h [B, seq, dim] with key_mask [B, seq] (or none).
  torch::Tensor attention_layer(const torch::Tensor& h, const std::string& prefix, const AttentionSpec& spec,
                                const torch::Tensor& key_mask) const;
  torch::Tensor swiglu(const torch::Tensor& h, const std::string& prefix) const;
  // Krea2TextFusion then Krea2TextProjection: [B, L, NL, Dt] -> [B, L, hidden].
  torch::Tensor text_stage(const torch::Tensor& text, const torch::Tensor& text_mask,
                           NamedTensors* intermediates) const;
  // One Krea2TransformerBlock; temb_mod [B, 1, 6 * hidden].
  torch::Tensor block(const std::string& prefix, const torch::Tensor& x, const torch::Tensor& temb_mod,
                      const AttentionSpec& spec, const torch::Tensor& key_mask) const;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_KREA2_KREA2_MODEL_H_
