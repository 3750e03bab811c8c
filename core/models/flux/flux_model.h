// FluxModel: a port of diffusers' FluxTransformer2DModel forward (FLUX.1 dev
// and schnell) — timestep / guidance / pooled-text embedding, double blocks
// with joint text-first attention, single blocks, 3-axis RoPE, the final
// adaLN layer — over packed latents, as upstream's call takes them.
//
// Not here: packing latents (flux_latents.h), key names and the
// checkpoint layouts (flux_params.h, flux_weight_layout.h).
#ifndef DIFFUSIOND_CORE_MODELS_FLUX_FLUX_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_FLUX_FLUX_MODEL_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/models/common/attention.h"
#include "core/models/common/configured_denoiser.h"
#include "core/models/diffusion_model.h"
#include "core/models/flux/flux_config.h"

namespace diffusiond {

inline constexpr absl::string_view kFluxArchitecture = "flux";

// The inputs of one forward, named and shaped as upstream's call.
struct FluxInputs {
  torch::Tensor hidden_states;          // [B, S, in_channels] packed latents
  torch::Tensor encoder_hidden_states;  // [B, L, joint_attention_dim]
  torch::Tensor pooled_projections;     // [B, pooled_projection_dim]
  torch::Tensor timestep;               // [B], sigma in [0, 1] (the model scales by 1000)
  torch::Tensor img_ids;                // [S, 3], shared by the batch
  torch::Tensor txt_ids;                // [L, 3]
  torch::Tensor guidance;               // [B] iff guidance_embeds, else undefined
};

// Thread-safe for concurrent forwards.
class FluxModel final : public ConfiguredDenoiser<FluxConfig> {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`
  // with the right shapes (in diffusers layout: see flux_weight_layout.h).
  // FAILED_PRECONDITION naming the first missing, misshapen or unexpected
  // tensor. `schedule` is the default schedule (from the pipeline's
  // scheduler_config.json when there is one).
  static absl::StatusOr<std::unique_ptr<FluxModel>> create(
      const FluxConfig& config, std::unique_ptr<WeightStore> weights,
      const ScheduleOptions& schedule = flux_default_schedule(FluxConfig()));

  absl::string_view architecture() const override { return kFluxArchitecture; }

  // FLUX.1 predicts the velocity noise − x0 at time sigma.
  FlowConvention flow_convention() const override { return {1.0f, ModelTime::kSigma}; }
  // Unpacked latents [in_channels / 4, H, W] with H and W even (the
  // predictor packs 2×2 patches); up to 512 (a 4096-pixel side).
  LatentLayout latent_layout() const override { return {config_.in_channels / 4, 2, 512}; }
  // The static or resolution-dependent schedule; the latter's mu comes from
  // the packed token count (H/2)(W/2).
  ScheduleOptions default_schedule(const std::vector<int64_t>& latent_shape) const override;
  // "encoder_hidden_states" [L, joint_attention_dim] (T5),
  // "pooled_projections" [pooled_projection_dim] (CLIP) and, for
  // guidance-distilled models (FLUX.1-dev), the scalar "guidance"
  // (default 3.5, the pipeline's).
  std::vector<ConditioningInput> conditioning_inputs() const override;
  // True classifier-free guidance (diffusers' true_cfg_scale): a second
  // pass over negative conditioning.
  bool supports_negative() const override { return true; }
  // The double-stream blocks, then the single-stream ones.
  std::vector<std::string> block_containers() const override {
    return {"transformer_blocks", "single_transformer_blocks"};
  }
  absl::StatusOr<FlowPredictor> flow_predictor(const Conditioning& positive,
                                               const Conditioning* negative) const override;
  std::optional<ActivationQuery> step_activation_query(const NamedTensors& inputs) const override;

  // Named inputs as upstream's call: "hidden_states", "encoder_hidden_states",
  // "pooled_projections", "timestep", "img_ids", "txt_ids" and, iff the model
  // has guidance_embeds, "guidance". Output "out" [B, S, out_features].
  // INVALID_ARGUMENT listing every missing, unexpected or misshapen input.
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // One forward; float inputs of any dtype are converted to
  // compute_dtype(*this) (ids and the RoPE tables stay float32 / float64).
  // Returns [B, S, out_features] at the compute dtype. INVALID_ARGUMENT
  // listing every inconsistent input (what was got and expected);
  // INTERNAL or RESOURCE_EXHAUSTED if libtorch fails.
  absl::StatusOr<torch::Tensor> forward(const FluxInputs& inputs) const;

 private:
  struct Rope {
    torch::Tensor txt_cos, txt_sin, img_cos, img_sin;  // [B, L or S, head_dim / 2]
    torch::Tensor cos, sin;                            // [B, L + S, head_dim / 2]
  };

  FluxModel(const FluxConfig& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule);

  absl::Status check_inputs(const FluxInputs& in) const;
  torch::Tensor run(const FluxInputs& in) const;
  torch::Tensor linear(const torch::Tensor& x, const std::string& module) const;
  torch::Tensor embed_time(const FluxInputs& in, torch::ScalarType dtype) const;
  // Queries or keys of one stream: projection, per-head RMSNorm, RoPE;
  // returns [B, heads, seq, head_dim].
  torch::Tensor qk_heads(const torch::Tensor& h, const std::string& proj, const std::string& norm,
                         const torch::Tensor& cos, const torch::Tensor& sin) const;
  torch::Tensor v_heads(const torch::Tensor& h, const std::string& proj) const;
  std::pair<torch::Tensor, torch::Tensor> double_block(const std::string& prefix, torch::Tensor x,
                                                       torch::Tensor c, const torch::Tensor& temb,
                                                       const Rope& rope) const;
  torch::Tensor single_block(const std::string& prefix, const torch::Tensor& s,
                             const torch::Tensor& temb, const Rope& rope) const;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FLUX_FLUX_MODEL_H_
