// ZImageModel: a port of diffusers' ZImageTransformer2DModel forward —
// patchify/unpatchify, caption and image padding to multiples of 32 with the
// pad tokens, noise and context refiners, 3-axis RoPE, adaLN modulation, the
// final layer, and batches whose items have different caption lengths.
#ifndef DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_MODEL_H_

#include <torch/types.h>

#include <array>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/common/attention.h"
#include "core/models/common/configured_denoiser.h"
#include "core/models/common/layers.h"
#include "core/models/diffusion_model.h"
#include "core/models/z_image/z_image_config.h"

namespace diffusiond {

inline constexpr absl::string_view kZImageArchitecture = "z-image";

// Thread-safe for concurrent forwards.
class ZImageModel final : public ConfiguredDenoiser<ZImageConfig> {
 public:
  // Checks that `weights` holds exactly the parameter table of `config` with
  // the right shapes. FAILED_PRECONDITION naming the first missing,
  // misshapen or unexpected tensor.
  // `schedule` is the default schedule (from the pipeline's
  // scheduler_config.json when there is one).
  static absl::StatusOr<std::unique_ptr<ZImageModel>> create(
      const ZImageConfig& config, std::unique_ptr<WeightStore> weights,
      const ScheduleOptions& schedule = z_image_default_schedule());

  absl::string_view architecture() const override { return kZImageArchitecture; }

  // Named inputs (docs/api.md): "x" [B, C, F, H, W]; "t" [B]; captions as
  // "cap_feats" [B, L, cap_feat_dim] or "cap_feats_0" … "cap_feats_<B-1>"
  // [L_i, cap_feat_dim] (lengths may differ). Output "out" [B, C, F, H, W].
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // Z-Image predicts x0 − noise at time 1 − sigma.
  FlowConvention flow_convention() const override { return {-1.0f, ModelTime::kOneMinusSigma}; }
  // Unpacked [in_channels, H, W]; the model patchifies itself.
  LatentLayout latent_layout() const override {
    return {config_.in_channels, config_.patch_size,
            std::min(config_.axes_lens[1], config_.axes_lens[2]) * config_.patch_size};
  }
  ScheduleOptions default_schedule(const std::vector<int64_t>&) const override { return schedule_; }
  // "cap_feats" [L, cap_feat_dim]: the text encoder's hidden states.
  std::vector<ConditioningInput> conditioning_inputs() const override;
  bool supports_negative() const override { return true; }
  // The refiners, then the main layers (run()'s order).
  std::vector<std::string> block_containers() const override {
    return {"noise_refiner", "context_refiner", "layers"};
  }
  absl::StatusOr<FlowPredictor> flow_predictor(const Conditioning& positive,
                                               const Conditioning* negative) const override;
  std::optional<ActivationQuery> step_activation_query(const NamedTensors& inputs) const override;

  // One forward, upstream's call convention: x[i] is [C, F, H, W], t is [B]
  // model-space time in [0, 1], cap_feats[i] is [L_i, cap_feat_dim]. Inputs
  // of any float dtype are converted to compute_dtype(*this). Returns one
  // [C, F, H, W] tensor per item at the compute dtype. INVALID_ARGUMENT for
  // inconsistent inputs (naming what was got and expected); INTERNAL or
  // RESOURCE_EXHAUSTED if libtorch fails.
  absl::StatusOr<std::vector<torch::Tensor>> forward(const std::vector<torch::Tensor>& x,
                                                     const torch::Tensor& t,
                                                     const std::vector<torch::Tensor>& cap_feats) const;

 private:
  ZImageModel(const ZImageConfig& config, std::unique_ptr<WeightStore> weights,
              const ScheduleOptions& schedule);

  absl::Status check_inputs(const std::vector<torch::Tensor>& x, const torch::Tensor& t,
                            const std::vector<torch::Tensor>& cap_feats) const;
  std::vector<torch::Tensor> run(const std::vector<torch::Tensor>& x, const torch::Tensor& t,
                                 const std::vector<torch::Tensor>& cap_feats) const;
  // Every item's patches, caption and position ids, padded to multiples of
  // 32 with the masks of the padding.
  struct Patchified {
    std::vector<torch::Tensor> patches, x_ids, x_pad, caps, cap_ids, cap_pad;
    std::vector<std::array<int64_t, 3>> sizes;  // each item's F, H, W
  };
  Patchified patchify(const std::vector<torch::Tensor>& x, const std::vector<torch::Tensor>& cap_feats) const;
  std::vector<torch::Tensor> final_layer(torch::Tensor ub, const torch::Tensor& adaln,
                                         const std::vector<std::array<int64_t, 3>>& sizes) const;
  torch::Tensor linear(const torch::Tensor& x, const std::string& prefix, bool bias) const;
  torch::Tensor block(const std::string& prefix, torch::Tensor x, const torch::Tensor& mask,
                      const torch::Tensor& cos, const torch::Tensor& sin,
                      const torch::Tensor& adaln) const;
  torch::Tensor attention_block(const std::string& prefix, const torch::Tensor& h,
                                const torch::Tensor& mask, const torch::Tensor& cos,
                                const torch::Tensor& sin) const;

  const MultiAxisRope rope_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_MODEL_H_
