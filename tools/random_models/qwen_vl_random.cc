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
