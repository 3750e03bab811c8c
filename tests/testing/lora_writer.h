// Writing LoRA adapter files (safetensors, float32) from named tensors, for
// tests: the keys say the layout (kohya, diffusers, ComfyUI; core/lora).
#ifndef DIFFUSIOND_TESTS_TESTING_LORA_WRITER_H_
#define DIFFUSIOND_TESTS_TESTING_LORA_WRITER_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/util/status_macros.h"

namespace diffusiond::testing {

using LoraTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Writes `tensors`, each as float32, to `path`.
inline absl::Status write_lora_file(const std::string& path, const LoraTensors& tensors) {
  std::vector<TensorSpec> specs;
  std::vector<torch::Tensor> values;
  for (const auto& [key, t] : tensors) {
    values.push_back(t.to(torch::kFloat32).contiguous());
    specs.push_back({key, DType::kF32, t.sizes().vec()});
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWriter> w, SafetensorsWriter::create(path, specs));
  for (const torch::Tensor& t : values) {
    DIFFUSIOND_RETURN_IF_ERROR(w->append(static_cast<const char*>(t.data_ptr()), t.nbytes()));
  }
  return w->close();
}

// A diffusers/PEFT module of rank `rank` on the denoiser's `module`
// ("proj_out"): A [rank, in] and B [out, rank] drawn from `seed`, scaled to
// 0.1. Without alpha its scale is 1 (alpha = rank).
inline LoraTensors peft_lora_module(const std::string& module, int64_t in, int64_t out, int64_t rank, uint64_t seed) {
  torch::manual_seed(seed);
  torch::Tensor down = torch::randn({rank, in}) * 0.1;
  torch::Tensor up = torch::randn({out, rank}) * 0.1;
  return {{"transformer." + module + ".lora_A.weight", down}, {"transformer." + module + ".lora_B.weight", up}};
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_LORA_WRITER_H_
