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

std::string qwen_image_config_json(const QwenImageConfig& c) {
  nlohmann::ordered_json j;
  j["_class_name"] = "QwenImageTransformer2DModel";
  j["attention_head_dim"] = c.attention_head_dim;
  j["axes_dims_rope"] = c.axes_dims_rope;
  j["guidance_embeds"] = false;
  j["in_channels"] = c.in_channels;
  j["joint_attention_dim"] = c.joint_attention_dim;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_layers"] = c.num_layers;
  j["out_channels"] = c.out_channels;
  j["patch_size"] = c.patch_size;
  j["use_additional_t_cond"] = false;
  j["use_layer3d_rope"] = false;
  j["zero_cond_t"] = c.zero_cond_t;
  return j.dump(2);
}

absl::Status write_random_qwen_image(const QwenImageConfig& config, absl::string_view folder, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", qwen_image_config_json(config) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", qwen_image_parameter_table(config), seed);
}

}  // namespace diffusiond
