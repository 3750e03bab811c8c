#include "tools/random_models/qwen_vl_random.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "core/models/common/qwen_text_tower.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

// The tower's table under the checkpoint's module prefix.
std::vector<ParamSpec> prefixed_table(const QwenTowerSpec& spec, const std::string& prefix) {
  std::vector<ParamSpec> table = qwen_tower_parameter_table(spec);
  for (ParamSpec& p : table) p.name = prefix + p.name;
  return table;
}

// config.json as save_pretrained writes it: the parser's fields, and a
// dtype it does not read.
absl::Status write_vl_folder(nlohmann::json config, const QwenTowerSpec& spec, const std::string& prefix,
                             const std::string& folder, uint64_t seed, const torch::Device& device) {
  config["dtype"] = "bfloat16";
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/config.json", config.dump(2) + "\n"));
  return write_random_weights(folder + "/model.safetensors", prefixed_table(spec, prefix), seed, device);
}

}  // namespace

Qwen25VlConfig mid_size_qwen25_vl_config() {
  Qwen25VlConfig c;
  c.vocab_size = 152064;
  c.hidden_size = 3584;
  c.intermediate_size = 18944;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 28;
  c.num_key_value_heads = 4;
  c.max_position_embeddings = 128000;
  c.rope_theta = 1000000.0;
  c.rms_norm_eps = 1e-6;
  c.mrope_section = {16, 24, 24};
  return c;
}

Qwen3VlConfig mid_size_qwen3_vl_config() {
  Qwen3VlConfig c;
  c.vocab_size = 151936;
  c.hidden_size = 2560;
  c.intermediate_size = 9728;
  c.num_hidden_layers = 8;
  c.num_attention_heads = 32;
  c.num_key_value_heads = 8;
  c.head_dim = 128;
  c.max_position_embeddings = 262144;
  c.rope_theta = 5000000.0;
  c.rms_norm_eps = 1e-6;
  c.mrope_section = {24, 20, 20};
  return c;
}

absl::Status write_random_qwen25_vl(const Qwen25VlConfig& config, const std::string& folder, uint64_t seed,
                                    const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  return write_vl_folder(to_json(config), config.tower_spec(), "model.", folder, seed, device);
}

absl::Status write_random_qwen3_vl(const Qwen3VlConfig& config, const std::string& folder, uint64_t seed,
                                   const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  return write_vl_folder(to_json(config), config.tower_spec(), "language_model.", folder, seed, device);
}

}  // namespace diffusiond
