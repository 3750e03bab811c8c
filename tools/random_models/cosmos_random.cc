#include "tools/random_models/cosmos_random.h"

#include <nlohmann/json.hpp>

#include "core/models/cosmos/cosmos_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

CosmosConfig demo_cosmos_config() {
  CosmosConfig c;
  c.num_attention_heads = 4;
  c.attention_head_dim = 64;
  c.num_layers = 4;
  c.text_embed_dim = 256;
  c.adaln_lora_dim = 64;
  c.rope_scale = {1.0, 4.0, 4.0};
  return c;
}

CosmosConfig mid_size_cosmos_config() {
  CosmosConfig c;
  c.num_attention_heads = 16;
  c.num_layers = 8;
  c.rope_scale = {1.0, 4.0, 4.0};
  return c;
}

absl::Status write_random_cosmos(const CosmosConfig& config, absl::string_view folder, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", cosmos_parameter_table(config), seed);
}

}  // namespace diffusiond
