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

absl::Status write_random_wan_vae(const WanVaeConfig& config, const std::string& folder, uint64_t seed,
                                  const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(folder + "/diffusion_pytorch_model.safetensors", wan_vae_parameter_table(config), seed,
                              device);
}

}  // namespace diffusiond
