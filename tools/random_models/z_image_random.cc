#include "tools/random_models/z_image_random.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/models/z_image/z_image_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

ZImageConfig demo_z_image_config() {
  ZImageConfig c;
  c.dim = 256;
  c.n_heads = 4;  // head_dim 64 = 16 + 24 + 24
  c.axes_dims = {16, 24, 24};
  c.n_layers = 4;
  c.n_refiner_layers = 2;
  c.cap_feat_dim = 128;
  return c;
}

ZImageConfig mid_size_z_image_config() {
  ZImageConfig c;
  c.dim = 1536;
  c.n_heads = 12;
  c.n_layers = 8;
  c.n_refiner_layers = 2;
  return c;
}

absl::Status write_random_z_image(const ZImageConfig& config, absl::string_view folder, uint64_t seed,
                                  const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", z_image_parameter_table(config), seed,
                              device);
}

}  // namespace diffusiond
