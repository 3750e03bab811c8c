// Model: any loaded architecture — a denoiser (diffusion_model.h), a text
// encoder or a VAE — as the cache and the API see it: its weights, its
// compute dtype (set at load, the only dtype source), its architecture's
// name and role, and one forward over named tensors.
#ifndef DIFFUSIOND_CORE_MODELS_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_MODEL_H_

#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/precision/weight_store.h"

namespace diffusiond {

struct ActivationEstimate;  // activation_estimate.h

// Tensors by the name an architecture gives them (docs/api.md lists them).
using NamedTensors = std::map<std::string, torch::Tensor>;

// The latent space a denoiser works in or a decoder decodes: channels,
// image pixels per latent along each side (0 where the model does not fix
// it: a denoiser's latents take the decoder's factor), and for a video
// decoder the frames per latent frame after the first (0: no time axis).
struct LatentGeometry {
  int64_t channels = 0;
  int64_t spatial_factor = 0;
  int64_t temporal_factor = 0;
};

// What a model is for in a pipeline. A text conditioner sits between a text
// encoder and the denoiser (text_conditioner.h).
enum class ModelRole { kDenoiser, kTextEncoder, kVae, kTextConditioner };
absl::string_view model_role_name(ModelRole role);

// Immutable after construction; forwards may run concurrently.
class Model {
 public:
  explicit Model(std::unique_ptr<WeightStore> weights) : weights_(std::move(weights)) {}
  virtual ~Model() = default;

  virtual absl::string_view architecture() const = 0;
  virtual ModelRole role() const = 0;
  const WeightStore& weights() const { return *weights_; }
  // Lets bf16 linears on the CPU pack their weights at first use
  // (WeightStore::packed_linear). For an engine without a device only: a
  // placement copies the stored bytes as they are. Call before any forward.
  void enable_cpu_packing() { weights_->enable_cpu_packing(); }

  // One forward over the architecture's named inputs, returning its named
  // outputs at the compute dtype. INVALID_ARGUMENT naming any missing,
  // unexpected or misshapen input and what was expected.
  virtual absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const = 0;

  // The containers of repeated blocks, in forward order ("layers" for
  // weights "layers.<i>.…"): the units a VRAM residency plan keeps or
  // streams (core/vram/block_layout.h). Empty: the model is placed whole.
  virtual std::vector<std::string> block_containers() const { return {}; }

  // The bytes one step(inputs) holds beside the weights at its peak, on the
  // CPU or (device_is_cpu false) on a device, and what they are made of:
  // what a Step reserves before it runs. 0 bytes for inputs the role cannot
  // read a size from (step() refuses those). Each role says it: the engine
  // asks no model what it is.
  // (activation_estimate.h includes this header, so the default is in
  // model.cc.)
  virtual ActivationEstimate step_activations(const NamedTensors& inputs, bool device_is_cpu) const;

 protected:
  // The weight named `name` at the compute dtype (FP8 decoded into a fresh
  // tensor that dies with the caller's use of it). REQUIRES: the model was
  // validated to hold it.
  torch::Tensor param(absl::string_view name) const;
  // Where this forward runs: the device of the calling thread's placement
  // of this model (forward_weights.h), else the CPU. Forwards move their
  // inputs there and create their tensors there.
  torch::Device forward_device() const;
  // x @ weight^T + bias (`bias` empty: none) at the compute dtype. A
  // placement may run it as a scaled FP8 matmul (forward_weights.h);
  // otherwise the weight is materialised and upcast, as param() does. The
  // calling thread's LinearAdapter for this model, if any, adds its term
  // for `weight` (linear_adapter.h): every linear an adapter may target
  // goes through here.
  torch::Tensor linear_layer(const torch::Tensor& x, absl::string_view weight, absl::string_view bias) const;

 private:
  // linear_layer() without the adapter's term: the stored weight's product.
  torch::Tensor stored_linear(const torch::Tensor& x, absl::string_view weight, absl::string_view bias) const;

  std::unique_ptr<WeightStore> weights_;
};

// The dtype every forward of `model` runs at. Set at load; no code infers a
// dtype from a parameter.
inline torch::ScalarType compute_dtype(const Model& model) { return model.weights().compute_dtype(); }

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_MODEL_H_
