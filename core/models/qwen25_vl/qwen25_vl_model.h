// Qwen25VlModel: the language tower of transformers' Qwen2.5-VL
// (Qwen2_5_VLTextModel, text only) as a text encoder — Qwen-Image's. The
// shared Qwen tower (core/models/common/qwen_text_tower.h) with q/k/v
// biases, no o_proj bias, no q/k norm and M-RoPE in chunks, which for text
// (three equal position rows) is 1-D RoPE over the positions given.
//
// Not here: the vision tower (skipped at load), tokenisation (core/text) or
// what Qwen-Image takes of the hidden states (core/pipeline/qwen_image/).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_MODEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/common/qwen_text_tower.h"
#include "core/models/qwen25_vl/qwen25_vl_config.h"

namespace diffusiond {

// Qwen-Image's text encoder: the language tower of Qwen2.5-VL
// (transformers' Qwen2_5_VLForConditionalGeneration).
inline constexpr absl::string_view kQwen25VlArchitecture = "qwen2.5-vl";

// Immutable after construction; forwards may run concurrently.
class Qwen25VlModel final : public QwenTextTower {
 public:
  // Checks that `weights` holds exactly the tower's parameter table for
  // `config`. INVALID_ARGUMENT for a bad config; FAILED_PRECONDITION naming
  // the first missing, misshapen or unexpected tensor. `tokenizer` (may be
  // null) serves encode().
  static absl::StatusOr<std::unique_ptr<Qwen25VlModel>> create(const Qwen25VlConfig& config,
                                                               std::unique_ptr<WeightStore> weights,
                                                               std::shared_ptr<const Tokenizer> tokenizer = nullptr);

  absl::string_view architecture() const override { return kQwen25VlArchitecture; }
  const Qwen25VlConfig& config() const { return config_; }

  // QwenTextTower::hidden_states_step (inputs and outputs documented there).
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override { return hidden_states_step(inputs); }

 private:
  Qwen25VlModel(const Qwen25VlConfig& config, std::unique_ptr<WeightStore> weights,
                std::shared_ptr<const Tokenizer> tokenizer)
      : QwenTextTower(config.tower_spec(), std::move(weights), std::move(tokenizer)), config_(config) {}

  const Qwen25VlConfig config_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN25_VL_QWEN25_VL_MODEL_H_
