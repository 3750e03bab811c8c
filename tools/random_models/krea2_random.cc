#include "tools/random_models/krea2_random.h"

#include <nlohmann/json.hpp>

#include "core/models/krea2/krea2_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

Krea2Config demo_krea2_config() {
  Krea2Config c;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.attention_head_dim = 64;
  c.axes_dims_rope = {16, 24, 24};
  c.num_layers = 4;
  c.intermediate_size = 768;
  c.text_hidden_dim = 128;
  c.num_text_layers = 4;
  c.text_num_attention_heads = 2;
  c.text_num_key_value_heads = 2;
  c.text_intermediate_size = 384;
  c.num_layerwise_text_blocks = 1;
  c.num_refiner_text_blocks = 1;
  return c;
}

Krea2Config mid_size_krea2_config() {
  Krea2Config c;
  c.num_attention_heads = 12;
  c.num_key_value_heads = 3;
  c.num_layers = 8;
  c.intermediate_size = 4096;
  c.text_hidden_dim = 1024;
  c.text_num_attention_heads = 8;
  c.text_num_key_value_heads = 8;
  c.text_intermediate_size = 2816;
  c.num_layerwise_text_blocks = 1;
  c.num_refiner_text_blocks = 1;
  return c;
}

absl::Status write_random_krea2(const Krea2Config& config, absl::string_view folder, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", krea2_parameter_table(config), seed);
}

}  // namespace diffusiond
