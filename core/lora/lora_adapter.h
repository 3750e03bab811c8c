// LoraAdapter: a LoRA adapter file loaded for one architecture — every
// module's A and B at the compute dtype, its scale, and the project's
// weights it updates — ready to attach to calls (adapter_set.h) or to merge
// into a copy of the weights (merged_weight.h). A CacheValue, so the engine
// can hold adapters in its cache, sized by LoraPlan::bytes before loading.
//
// Not here: conversion rules (lora_plan.h, lora_rules.h) or application.
#ifndef DIFFUSIOND_CORE_LORA_LORA_ADAPTER_H_
#define DIFFUSIOND_CORE_LORA_LORA_ADAPTER_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cache/cache_value.h"
#include "core/lora/lora_file.h"
#include "core/lora/lora_key.h"
#include "core/lora/lora_plan.h"

namespace diffusiond {

// One module: W' = W + scale · B·A, B's rows split among `modules` in order
// by their weights' rows (one module: all of them).
struct LoraModule {
  std::string source;  // the file's name for it
  // The project's module names (weights "<m>.weight"); a text encoder's
  // module as the file names it.
  std::vector<std::string> modules;
  std::string text_encoder;  // empty for the denoiser
  torch::Tensor down;        // A [rank, in], compute dtype, CPU
  torch::Tensor up;          // B [out, rank], rows in the project's order
  double scale = 1;          // alpha / rank (alpha / √rank with rsLoRA)
};

// Immutable after load; shared by the calls it is attached to.
class LoraAdapter : public CacheValue {
 public:
  // Reads the tensors `plan` names from `file` at the float `dtype`.
  // INVALID_ARGUMENT naming the tensor for a NaN or an infinity (in the file
  // or after the cast), an alpha tensor the metadata contradicts, or a
  // swapped modulation with an odd row count; the file's read errors
  // otherwise. REQUIRES: `plan` was made from `file`.
  static absl::StatusOr<std::unique_ptr<LoraAdapter>> load(const LoraFile& file, const LoraPlan& plan,
                                                           torch::ScalarType dtype);
  // Opens `path`, plans it for `architecture` and loads it: the errors of
  // LoraFile::open, plan_lora and load().
  static absl::StatusOr<std::unique_ptr<LoraAdapter>> read(absl::string_view path, absl::string_view architecture,
                                                           torch::ScalarType dtype);

  const std::string& path() const { return path_; }
  const std::string& architecture() const { return architecture_; }
  LoraFormat format() const { return format_; }
  torch::ScalarType dtype() const { return dtype_; }
  // The denoiser's modules.
  const std::vector<LoraModule>& modules() const { return modules_; }
  // Text-encoder modules the file also carries: kept and listed, never
  // applied to the denoiser (no encoder here reads adapters yet).
  const std::vector<LoraModule>& text_encoder_modules() const { return text_encoder_modules_; }
  // Bytes of every A and B held.
  int64_t nbytes() const { return nbytes_; }

 private:
  LoraAdapter() = default;

  std::string path_;
  std::string architecture_;
  LoraFormat format_ = LoraFormat::kDiffusers;
  torch::ScalarType dtype_ = torch::kFloat32;
  std::vector<LoraModule> modules_;
  std::vector<LoraModule> text_encoder_modules_;
  int64_t nbytes_ = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LORA_LORA_ADAPTER_H_
