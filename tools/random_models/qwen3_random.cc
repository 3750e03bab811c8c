#include "tools/random_models/qwen3_random.h"

#include <nlohmann/json.hpp>

#include "core/models/qwen3/qwen3_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

// The config as save_pretrained writes it: the parser's fields, and the
// tying and a dtype it does not read.
std::string qwen3_config_json(const Qwen3Config& config) {
  nlohmann::json j = to_json(config);
  j["tie_word_embeddings"] = true;
  j["torch_dtype"] = "bfloat16";
  return j.dump(2) + "\n";
}

}  // namespace

absl::Status write_random_qwen3(const Qwen3Config& config, const std::string& dir, uint64_t seed,
                                const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", qwen3_config_json(config)));
  return write_random_weights(dir + "/model.safetensors", qwen3_parameter_table(config), seed, device);
}

}  // namespace diffusiond
