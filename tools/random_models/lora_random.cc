#include "tools/random_models/lora_random.h"

#include <torch/torch.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::Status write_lora_file(const std::string& path, const LoraTensors& tensors) {
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

LoraTensors peft_lora_module(const std::string& module, int64_t in, int64_t out, int64_t rank, uint64_t seed) {
  torch::manual_seed(seed);
  torch::Tensor down = torch::randn({rank, in}) * 0.1;
  torch::Tensor up = torch::randn({out, rank}) * 0.1;
  return {{"transformer." + module + ".lora_A.weight", down}, {"transformer." + module + ".lora_B.weight", up}};
}

LoraTensors random_flux_attention_lora(const FluxConfig& config, int64_t rank, uint64_t seed) {
  const int64_t d = config.inner_dim();
  LoraTensors out;
  const auto add = [&](const std::string& module) {
    const LoraTensors m = peft_lora_module(module, d, d, rank, seed + out.size());
    out.insert(out.end(), m.begin(), m.end());
  };
  for (int64_t b = 0; b < config.num_layers; ++b) {
    for (const char* p : {"to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj",
                          "to_add_out"}) {
      add(absl::StrCat("transformer_blocks.", b, ".attn.", p));
    }
  }
  for (int64_t b = 0; b < config.num_single_layers; ++b) {
    for (const char* p : {"to_q", "to_k", "to_v"}) add(absl::StrCat("single_transformer_blocks.", b, ".attn.", p));
  }
  return out;
}

}  // namespace diffusiond
