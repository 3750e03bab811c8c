// The architectures pipeline families name for components that no model
// family implements yet (Qwen-Image's and Krea 2's text encoders). A family
// declares such a component as upstream has it, so its recipe is complete;
// Generate refuses the pipeline before anything loads, naming the
// component. When one is ported, its constant moves to its model's header
// (core/models/<arch>/) and leaves this list, as the Qwen-Image and Wan
// VAEs' did (core/models/wan_vae/wan_vae_model.h).
//
// Not here: the architectures diffusiond loads (each beside its model).
#ifndef DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_
#define DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_

#include "absl/strings/string_view.h"

namespace diffusiond {

// Qwen-Image's text encoder: the language tower of Qwen2.5-VL
// (transformers' Qwen2_5_VLForConditionalGeneration).
inline constexpr absl::string_view kQwen25VlArchitecture = "qwen2.5-vl";
// Krea 2's text encoder: the language tower of Qwen3-VL (Qwen3VLModel).
inline constexpr absl::string_view kQwen3VlArchitecture = "qwen3-vl";

// Whether `architecture` is one of the above: named by a family, loadable
// by no model family yet.
bool is_unported_architecture(absl::string_view architecture);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_
