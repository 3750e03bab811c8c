#include "tools/random_models/anima_conditioner_random.h"

#include "core/models/anima_conditioner/anima_conditioner_params.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

AnimaConditionerConfig demo_anima_conditioner_config() {
  AnimaConditionerConfig c;
  c.source_dim = 128;
  c.target_dim = 256;
  c.model_dim = 256;
  c.num_layers = 2;
  c.num_attention_heads = 4;
  c.target_vocab_size = 384;
  return c;
}

absl::Status write_random_anima_conditioner(const AnimaConditionerConfig& config, const std::string& folder,
                                            uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/config.json", to_json(config).dump(2) + "\n"));
  return write_random_weights(folder + "/diffusion_pytorch_model.safetensors",
                              anima_conditioner_parameter_table(config), seed);
}

}  // namespace diffusiond
