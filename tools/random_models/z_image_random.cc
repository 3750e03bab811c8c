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

std::string z_image_config_json(const ZImageConfig& c) {
  nlohmann::ordered_json j;
  j["_class_name"] = "ZImageTransformer2DModel";
  j["all_f_patch_size"] = {c.f_patch_size};
  j["all_patch_size"] = {c.patch_size};
  j["axes_dims"] = c.axes_dims;
  j["axes_lens"] = c.axes_lens;
  j["cap_feat_dim"] = c.cap_feat_dim;
  j["dim"] = c.dim;
  j["in_channels"] = c.in_channels;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_heads;
  j["n_layers"] = c.n_layers;
  j["n_refiner_layers"] = c.n_refiner_layers;
  j["norm_eps"] = c.norm_eps;
  j["qk_norm"] = c.qk_norm;
  j["rope_theta"] = c.rope_theta;
  j["siglip_feat_dim"] = nullptr;
  j["t_scale"] = c.t_scale;
  return j.dump(2);
}

absl::Status write_random_z_image(const ZImageConfig& config, absl::string_view folder, uint64_t seed,
                                  const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", z_image_config_json(config) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", z_image_parameter_table(config), seed,
                              device);
}

}  // namespace diffusiond
