#include "tools/random_models/wan_random.h"

#include <nlohmann/json.hpp>

#include "core/models/wan/wan_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

WanConfig demo_wan_config() {
  WanConfig c;
  c.num_attention_heads = 4;
  c.attention_head_dim = 64;
  c.text_dim = 256;
  c.ffn_dim = 1024;
  c.num_layers = 4;
  return c;
}

WanConfig mid_size_wan_config() {
  WanConfig c;
  c.num_attention_heads = 12;
  c.ffn_dim = 8960;
  c.num_layers = 8;
  return c;
}

absl::Status write_random_wan(const WanConfig& config, absl::string_view folder, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", wan_parameter_table(config), seed);
}

}  // namespace diffusiond
