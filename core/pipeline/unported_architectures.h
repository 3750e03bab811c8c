// The architectures pipeline families name for components that no model
// family implements yet: none today (the Qwen-Image and Wan VAEs and the
// Qwen2.5-VL and Qwen3-VL towers were the last). A family may declare
// such a component as upstream has it, so its recipe is complete; Generate
// refuses the pipeline before anything loads, naming the component. When
// one is ported, its constant moves to its model's header
// (core/models/<arch>/) and leaves this list.
//
// Not here: the architectures diffusiond loads (each beside its model).
#ifndef DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_
#define DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_

#include "absl/strings/string_view.h"

namespace diffusiond {

// Whether `architecture` is named by a family and loadable by no model
// family yet.
bool is_unported_architecture(absl::string_view architecture);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_UNPORTED_ARCHITECTURES_H_
