#include "tools/random_models/vae_random.h"

#include <nlohmann/json.hpp>

#include "core/models/vae/vae_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

VaeConfig demo_vae_config() {
  VaeConfig c;
  c.block_out_channels = {32, 32, 64, 64};
  c.layers_per_block = 1;
  c.norm_num_groups = 8;
  return c;
}

absl::Status write_random_vae(const VaeConfig& config, const std::string& folder, uint64_t seed,
                              const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(folder + "/diffusion_pytorch_model.safetensors", vae_parameter_table(config), seed,
                              device);
}

}  // namespace diffusiond
