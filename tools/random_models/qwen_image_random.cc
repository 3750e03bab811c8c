#include "tools/random_models/qwen_image_random.h"

#include <nlohmann/json.hpp>

#include "core/models/qwen_image/qwen_image_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

QwenImageConfig demo_qwen_image_config() {
  QwenImageConfig c;
  c.num_attention_heads = 4;
  c.attention_head_dim = 64;
  c.axes_dims_rope = {16, 24, 24};
  c.num_layers = 4;
  c.joint_attention_dim = 256;
  return c;
}

QwenImageConfig mid_size_qwen_image_config() {
  QwenImageConfig c;
  c.num_attention_heads = 12;
  c.num_layers = 8;
  return c;
}

absl::Status write_random_qwen_image(const QwenImageConfig& config, absl::string_view folder, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", qwen_image_parameter_table(config), seed);
}

}  // namespace diffusiond
