// AdapterRequest: a LoRA adapter as a call names it. Its own header, free
// of torch, so the server's request readers can build one.
#ifndef DIFFUSIOND_CORE_ENGINE_ADAPTER_REQUEST_H_
#define DIFFUSIOND_CORE_ENGINE_ADAPTER_REQUEST_H_

#include <cstddef>
#include <string>

namespace diffusiond {

// The most adapters one call may name: each is a file opened per call, and
// UIs stack a handful.
inline constexpr size_t kMaxCallAdapters = 16;

// A LoRA adapter for one call (core/lora): a file in the models directory
// (confined as model paths are) and the weight its term is multiplied by
// (PEFT's set_adapters weight; 0 leaves it out). Loaded once, cached by
// path, and attached beside the model's linears for the call only
// (adapter_admission.h).
struct AdapterRequest {
  // The file, or a loaded adapter's id (its cache key,
  // "lora:<architecture>:<dtype>:<path>", as events and GetStats name it).
  std::string path;
  double weight = 1;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_ADAPTER_REQUEST_H_
