// The architectures pipeline families name for components that no model
// family implements yet (the causal 3-D VAEs of Qwen-Image and Wan). A family declares such a
// component as upstream has it, so its recipe is complete; Generate refuses
// the pipeline before anything loads, naming the component. When one is
// ported, its constant moves to its model's header (core/models/<arch>/)
// and leaves this list.
//
// Not here: the architectures diffusiond loads (each beside its model).
#ifndef DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_
#define DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_

#include "absl/strings/string_view.h"

namespace diffusiond {

// diffusers' AutoencoderKLQwenImage: Qwen-Image's and Krea 2's decoder.
inline constexpr absl::string_view kQwenImageVaeArchitecture = "autoencoder-kl-qwen-image";
// diffusers' AutoencoderKLWan: Wan 2.x's causal 3-D video decoder.
inline constexpr absl::string_view kWanVaeArchitecture = "autoencoder-kl-wan";

// Whether `architecture` is one of the above: named by a family, loadable
// by no model family yet.
bool is_unported_architecture(absl::string_view architecture);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_
