#include "tools/random_models/wan_random.h"

#include <nlohmann/json.hpp>

#include "core/models/wan/wan_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

WanConfig demo_wan_config() {
  WanConfig c;
  c.num_attention_heads = 4;
  c.attention_head_dim = 64;
  c.text_dim = 256;
  c.ffn_dim = 1024;
  c.num_layers = 4;
  return c;
}

WanConfig mid_size_wan_config() {
  WanConfig c;
  c.num_attention_heads = 12;
  c.ffn_dim = 8960;
  c.num_layers = 8;
  return c;
}

std::string wan_config_json(const WanConfig& c) {
  nlohmann::ordered_json j;
  j["_class_name"] = "WanTransformer3DModel";
  j["added_kv_proj_dim"] = nullptr;
  j["attention_head_dim"] = c.attention_head_dim;
  j["cross_attn_norm"] = c.cross_attn_norm;
  j["eps"] = c.eps;
  j["ffn_dim"] = c.ffn_dim;
  j["freq_dim"] = c.freq_dim;
  j["image_dim"] = nullptr;
  j["in_channels"] = c.in_channels;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_layers"] = c.num_layers;
  j["out_channels"] = c.out_channels;
  j["patch_size"] = c.patch_size;
  j["pos_embed_seq_len"] = nullptr;
  j["qk_norm"] = c.qk_norm ? nlohmann::ordered_json("rms_norm_across_heads") : nlohmann::ordered_json();
  j["rope_max_seq_len"] = c.rope_max_seq_len;
  j["text_dim"] = c.text_dim;
  return j.dump(2);
}

absl::Status write_random_wan(const WanConfig& config, absl::string_view folder, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  const std::string dir(folder);
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", wan_config_json(config) + "\n"));
  return write_random_weights(dir + "/diffusion_pytorch_model.safetensors", wan_parameter_table(config), seed);
}

}  // namespace diffusiond
