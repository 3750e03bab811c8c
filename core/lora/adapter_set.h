// AdapterSet: the LoRA adapters one call runs with — each LoraAdapter with
// its weight (PEFT's set_adapters weights) — checked against the model they
// attach to. While attached (attach(), a LinearAdapterScope) every linear
// of that model on the calling thread computes
//   y = W x (+ b) + Σ weight · scale · B (A x)
// beside the stored weight, which is never changed, dequantised or copied:
// an FP8 or packed base stays as loaded, and the next call may run with
// other adapters, or none, at no cost. Several adapters on one weight add.
//
// Not here: loading adapters (lora_adapter.h), merging into a copy of the
// weights (merged_weight.h).
#ifndef DIFFUSIOND_CORE_LORA_ADAPTER_SET_H_
#define DIFFUSIOND_CORE_LORA_ADAPTER_SET_H_

#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/lora/lora_adapter.h"
#include "core/models/linear_adapter.h"
#include "core/models/model.h"

namespace diffusiond {

// The pipeline component a file's text-encoder name stands for: kohya's
// lora_te / lora_te1, diffusers' text_encoder and ComfyUI's clip_l (and any
// other ComfyUI name: a one-encoder family's encoder) are "text_encoder";
// lora_te2, text_encoder_2 and ComfyUI's t5xxl are "text_encoder_2";
// lora_te3 is "text_encoder_3".
std::string lora_text_encoder_component(absl::string_view file_name);

struct WeightedLoraAdapter {
  std::shared_ptr<const LoraAdapter> adapter;
  double weight = 1;  // multiplies the adapter's scale; 0 leaves it out
};

// Immutable after create(); may be attached by several threads at once.
// Holds its adapters; `model` must outlive it.
class AdapterSet final : public LinearAdapter {
 public:
  // One term of a weight: its rows of B (a fused original's part) and A.
  struct Term {
    torch::Tensor down;  // A [rank, in]
    torch::Tensor up;    // B [rows, rank]
    double scale = 1;    // the adapter's weight times its module's scale
  };

  // Checks `adapters` against `model`: each was loaded for the model's
  // architecture at its compute dtype, its weight is finite, and every
  // module's weights are held by the model as [rows, in] with `in` A's
  // columns and the rows adding up to B's. INVALID_ARGUMENT naming the
  // adapter, its module and the weight otherwise (a bounded list): nothing
  // is attached half-way.
  static absl::StatusOr<std::unique_ptr<AdapterSet>> create(const Model& model,
                                                            std::vector<WeightedLoraAdapter> adapters);

  // The set of the text-encoder modules of `adapters` meant for the
  // pipeline's text encoder `component` ("text_encoder", "text_encoder_2";
  // lora_text_encoder_component names each file's encoder), attached to the
  // encoder model `encoder` (its own architecture; the adapters were loaded
  // for the denoiser's, at its compute dtype, and are converted to the
  // encoder's). Module names as the file gives them (dotted, or kohya's
  // flattened) are matched to the encoder's weights. INVALID_ARGUMENT, as
  // create(), when a module names no weight of the encoder or does not fit
  // it. Null when no adapter has modules for `component`.
  static absl::StatusOr<std::unique_ptr<AdapterSet>> for_text_encoder(const Model& encoder,
                                                                      std::vector<WeightedLoraAdapter> adapters,
                                                                      absl::string_view component);
  // The bytes for_text_encoder() allocates converting A and B to the
  // encoder's compute dtype: the modules for `component` stored at another
  // dtype, at the encoder's element size; 0 when they match, as the
  // conversion then keeps the adapter's own tensors. A call reserves them
  // with its activations, as they live exactly as long.
  static int64_t text_encoder_conversion_bytes(const Model& encoder, const std::vector<WeightedLoraAdapter>& adapters,
                                               absl::string_view component);

  // Makes this set the calling thread's adapter for its model until the
  // returned scope goes (the attach point of one call).
  LinearAdapterScope attach() const { return LinearAdapterScope(*model_, *this); }

  torch::Tensor add_term(torch::Tensor y, const torch::Tensor& x, absl::string_view weight) const override;

  const Model& model() const { return *model_; }
  // The terms on the weight named `weight`, or null when none.
  const std::vector<Term>* terms(absl::string_view weight) const;
  // Every weight the set changes, sorted.
  std::vector<std::string> weights() const;

 private:
  AdapterSet(const Model& model, std::vector<WeightedLoraAdapter> adapters)
      : model_(&model), adapters_(std::move(adapters)) {}

  const Model* const model_;
  // Owns the tensors the terms view.
  const std::vector<WeightedLoraAdapter> adapters_;
  std::map<std::string, std::vector<Term>, std::less<>> terms_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LORA_ADAPTER_SET_H_
