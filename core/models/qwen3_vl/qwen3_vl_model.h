// Qwen3VlModel: the language tower of transformers' Qwen3-VL
// (Qwen3VLTextModel, text only) as a text encoder — Krea 2's. The shared
// Qwen tower (core/models/common/qwen_text_tower.h) with per-head q/k
// RMSNorm, attention_bias on all four projections (off in the released
// models), heads * head_dim free of hidden_size, and interleaved M-RoPE,
// which for text (three equal position rows) is 1-D RoPE over the
// positions given. Several hidden states can be taken at once as a stack
// (TextEncoding::hidden_layers), the layers past the deepest not run.
//
// Not here: the vision tower and its deepstack mergers (skipped at load;
// without pixels upstream never runs them), tokenisation (core/text) or
// which layers Krea 2 taps (core/pipeline/krea2/).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_MODEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/common/qwen_text_tower.h"
#include "core/models/qwen3_vl/qwen3_vl_config.h"

namespace diffusiond {

// Krea 2's text encoder: the language tower of Qwen3-VL (Qwen3VLModel).
inline constexpr absl::string_view kQwen3VlArchitecture = "qwen3-vl";

// Immutable after construction; forwards may run concurrently.
class Qwen3VlModel final : public QwenTextTower {
 public:
  // Checks that `weights` holds exactly the tower's parameter table for
  // `config`. INVALID_ARGUMENT for a bad config; FAILED_PRECONDITION naming
  // the first missing, misshapen or unexpected tensor. `tokenizer` (may be
  // null) serves encode().
  static absl::StatusOr<std::unique_ptr<Qwen3VlModel>> create(const Qwen3VlConfig& config,
                                                              std::unique_ptr<WeightStore> weights,
                                                              std::shared_ptr<const Tokenizer> tokenizer = nullptr);

  absl::string_view architecture() const override { return kQwen3VlArchitecture; }
  const Qwen3VlConfig& config() const { return config_; }

  // QwenTextTower::hidden_states_step (inputs and outputs documented there).
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override { return hidden_states_step(inputs); }

 private:
  Qwen3VlModel(const Qwen3VlConfig& config, std::unique_ptr<WeightStore> weights,
               std::shared_ptr<const Tokenizer> tokenizer)
      : QwenTextTower(config.tower_spec(), std::move(weights), std::move(tokenizer)), config_(config) {}

  const Qwen3VlConfig config_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_MODEL_H_
