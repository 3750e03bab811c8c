#include "tools/random_models/wan_vae_random.h"

#include <cassert>
#include <nlohmann/json.hpp>

#include "core/models/wan_vae/wan_vae_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

WanVaeConfig demo_qwen_image_vae_config() {
  // Through the parser, so every field not named is upstream's default.
  const absl::StatusOr<WanVaeConfig> c = wan_vae_config_from_json(
      {{"_class_name", std::string(wan_vae_class_name(WanVaeClass::kQwenImage))}, {"base_dim", 16}},
      "demo_qwen_image_vae_config");
  assert(c.ok());
  return *c;
}

WanVaeConfig qwen_image_vae_config() {
  WanVaeConfig c = demo_qwen_image_vae_config();
  c.base_dim = 96;  // upstream's default: the released model's widths
  c.decoder_base_dim = 96;
  return c;
}

WanVaeConfig demo_wan_vae_config() {
  WanVaeConfig c;
  c.base_dim = 8;
  c.decoder_base_dim = 8;
  // AutoencoderKLWan's published statistics (Wan2.1-T2V's vae/config.json).
  c.latents_mean = {-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
                    0.4134,  -0.0715, 0.5517,  -0.3632, -0.1922, -0.9497, 0.2503, -0.2921};
  c.latents_std = {2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
                   3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.916};
  return c;
}

absl::Status write_random_wan_vae(const WanVaeConfig& config, const std::string& folder, uint64_t seed,
                                  const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(folder + "/diffusion_pytorch_model.safetensors", wan_vae_parameter_table(config), seed,
                              device);
}

}  // namespace diffusiond
