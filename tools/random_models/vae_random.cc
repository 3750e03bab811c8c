#include "tools/random_models/vae_random.h"

#include <nlohmann/json.hpp>

#include "core/models/vae/vae_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

using json = nlohmann::ordered_json;

VaeConfig demo_vae_config() {
  VaeConfig c;
  c.block_out_channels = {32, 32, 64, 64};
  c.layers_per_block = 1;
  c.norm_num_groups = 8;
  return c;
}

std::string vae_config_json(const VaeConfig& c) {
  json j;
  j["_class_name"] = "AutoencoderKL";
  j["act_fn"] = "silu";
  j["block_out_channels"] = c.block_out_channels;
  j["down_block_types"] = std::vector<std::string>(c.block_out_channels.size(), "DownEncoderBlock2D");
  j["up_block_types"] = std::vector<std::string>(c.block_out_channels.size(), "UpDecoderBlock2D");
  j["in_channels"] = c.in_channels;
  j["out_channels"] = c.out_channels;
  j["latent_channels"] = c.latent_channels;
  j["layers_per_block"] = c.layers_per_block;
  j["norm_num_groups"] = c.norm_num_groups;
  j["sample_size"] = c.sample_size;
  j["scaling_factor"] = c.scaling_factor;
  j["shift_factor"] = c.shift_factor;
  j["use_quant_conv"] = false;
  j["use_post_quant_conv"] = false;
  j["mid_block_add_attention"] = true;
  return j.dump(2) + "\n";
}

absl::Status write_random_vae(const VaeConfig& config, const std::string& folder, uint64_t seed,
                              const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/config.json", vae_config_json(config)));
  return write_random_weights(folder + "/diffusion_pytorch_model.safetensors", vae_parameter_table(config), seed,
                              device);
}

}  // namespace diffusiond
