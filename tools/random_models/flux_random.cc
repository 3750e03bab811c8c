#include "tools/random_models/flux_random.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/models/flux/flux_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

FluxConfig demo_flux_config() {
  FluxConfig c;
  c.num_attention_heads = 4;
  c.attention_head_dim = 64;
  c.axes_dims_rope = {16, 24, 24};
  c.num_layers = 2;
  c.num_single_layers = 4;
  c.joint_attention_dim = 256;
  c.pooled_projection_dim = 128;
  c.guidance_embeds = true;
  return c;
}

FluxConfig mid_size_flux_config() {
  FluxConfig c;
  c.num_attention_heads = 12;
  c.num_layers = 3;
  c.num_single_layers = 6;
  c.guidance_embeds = true;
  return c;
}

std::string flux_scheduler_config_json(const FluxConfig& c) {
  nlohmann::ordered_json j;
  j["_class_name"] = "FlowMatchEulerDiscreteScheduler";
  j["base_image_seq_len"] = 256;
  j["base_shift"] = 0.5;
  j["max_image_seq_len"] = 4096;
  j["max_shift"] = 1.15;
  j["num_train_timesteps"] = 1000;
  j["shift"] = c.guidance_embeds ? 3.0 : 1.0;
  j["use_dynamic_shifting"] = c.guidance_embeds;
  return j.dump(2);
}

absl::Status write_random_flux(const FluxConfig& config, absl::string_view folder, uint64_t seed,
                               const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", to_json(config).dump(2) + "\n"));
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/scheduler_config.json", flux_scheduler_config_json(config) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", flux_parameter_table(config), seed, device);
}

}  // namespace diffusiond
