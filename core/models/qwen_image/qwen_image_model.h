// QwenImageModel: a port of diffusers' QwenImageTransformer2DModel forward
// (Qwen-Image) -- timestep embedding, RMSNorm'd text input, double-stream
// blocks with joint text-first attention (padding text masked as keys),
// centred 3-axis RoPE and the final adaLN layer -- over packed latents, as
// upstream's call takes them.
//
// Not here: packing latents (the 2x2 packing is FLUX's,
// core/models/flux/flux_latents.h), the RoPE tables (qwen_image_rope.h),
// key names (qwen_image_params.h).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_MODEL_H_

#include <torch/types.h>

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/common/attention.h"
#include "core/models/common/configured_denoiser.h"
#include "core/models/diffusion_model.h"
#include "core/models/qwen_image/qwen_image_config.h"
#include "core/models/qwen_image/qwen_image_rope.h"

namespace diffusiond {

inline constexpr absl::string_view kQwenImageArchitecture = "qwen-image";

// The inputs of one forward, named and shaped as upstream's call.
struct QwenImageInputs {
  torch::Tensor hidden_states;               // [B, S, in_channels] packed latents
  torch::Tensor encoder_hidden_states;       // [B, L, joint_attention_dim]
  torch::Tensor encoder_hidden_states_mask;  // [B, L], nonzero = valid; undefined: all valid
  torch::Tensor timestep;                    // [B], sigma in [0, 1] (the model scales by 1000)
  // Upstream's img_shapes of one item, shared by the batch: (frames, rows,
  // cols) of each image's 2x2-patch grid -- the generated image, then any
  // reference images of an edit, whose tokens follow in hidden_states; the
  // entries' tokens sum to S.
  std::vector<QwenImageShape> img_shapes;
};

// Thread-safe for concurrent forwards.
class QwenImageModel final : public ConfiguredDenoiser<QwenImageConfig> {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`
  // with the right shapes. FAILED_PRECONDITION naming the first missing,
  // misshapen or unexpected tensor. `schedule` is the default schedule
  // (from the pipeline's scheduler_config.json when there is one).
  static absl::StatusOr<std::unique_ptr<QwenImageModel>> create(
      const QwenImageConfig& config, std::unique_ptr<WeightStore> weights,
      const ScheduleOptions& schedule = qwen_image_default_schedule());

  absl::string_view architecture() const override { return kQwenImageArchitecture; }

  // Predicts the velocity noise − x0 at time sigma; true CFG rescales the
  // guided output per packed token to the positive's norm.
  FlowConvention flow_convention() const override;
  // Unpacked latents [in_channels / patch², H, W] with H and W multiples of
  // the patch; up to 512 (a 4096-pixel side).
  LatentLayout latent_layout() const override;
  // The resolution-dependent schedule; mu comes from the packed token
  // count (H/2)(W/2).
  ScheduleOptions default_schedule(const std::vector<int64_t>& latent_shape) const override;
  // "encoder_hidden_states" [L, joint_attention_dim] (Qwen2.5-VL's last
  // hidden states, template tokens dropped) and optionally
  // "encoder_hidden_states_mask" [L] (1 valid, 0 padding).
  std::vector<ConditioningInput> conditioning_inputs() const override;
  // True classifier-free guidance (the pipeline's true_cfg_scale).
  bool supports_negative() const override { return true; }
  std::vector<std::string> block_containers() const override { return {"transformer_blocks"}; }
  absl::StatusOr<FlowPredictor> flow_predictor(const Conditioning& positive,
                                               const Conditioning* negative) const override;
  std::optional<ActivationQuery> step_activation_query(const NamedTensors& inputs) const override;

  // Named inputs as upstream's call: "hidden_states", "encoder_hidden_states",
  // "timestep", "img_shapes" (integer [B, 3] rows (frames, rows, cols), or
  // [B, N, 3] for N images per item; every item's the same) and optionally
  // "encoder_hidden_states_mask". Output "out"
  // [B, S, out_features]. INVALID_ARGUMENT listing every missing,
  // unexpected or misshapen input.
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // One forward; float inputs of any dtype are converted to
  // compute_dtype(*this) (the RoPE tables stay float32). Returns [B, S,
  // out_features] at the compute dtype. When `intermediates` is given, it
  // receives upstream's module outputs by the reference fixture's names
  // ("t_sinusoid", "temb", "img_in", "txt_norm", "txt_in", "block<i>_img",
  // "block<i>_txt", "norm_out"), batched. INVALID_ARGUMENT listing every
  // inconsistent input; INTERNAL or RESOURCE_EXHAUSTED if libtorch fails.
  absl::StatusOr<torch::Tensor> forward(const QwenImageInputs& inputs, NamedTensors* intermediates = nullptr) const;

 private:
  // The RoPE rows expanded over the batch, [B, tokens, head_dim / 2].
  struct Rope {
    torch::Tensor img_cos, img_sin, txt_cos, txt_sin;
  };

  QwenImageModel(const QwenImageConfig& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule);

  absl::Status check_inputs(const QwenImageInputs& in) const;
  torch::Tensor run(const QwenImageInputs& in, const QwenImageRope& tables, NamedTensors* intermediates) const;
  torch::Tensor linear(const torch::Tensor& x, const std::string& module) const;
  // Queries or keys of one stream: projection, per-head RMSNorm, RoPE;
  // returns [B, heads, seq, head_dim].
  torch::Tensor qk_heads(const torch::Tensor& h, const std::string& proj, const std::string& norm,
                         const torch::Tensor& cos, const torch::Tensor& sin) const;
  torch::Tensor v_heads(const torch::Tensor& h, const std::string& proj) const;
  // One QwenImageTransformerBlock; returns (image, text) streams. `act` is
  // SiLU(temb); `act_zero`, when defined, SiLU(temb at t = 0), which
  // zero_cond_t gives the image tokens from `first_image_tokens` on.
  std::pair<torch::Tensor, torch::Tensor> block(const std::string& prefix, const torch::Tensor& x,
                                                const torch::Tensor& c, const torch::Tensor& act,
                                                const torch::Tensor& act_zero, int64_t first_image_tokens,
                                                const torch::Tensor& key_mask, const Rope& rope) const;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_MODEL_H_
