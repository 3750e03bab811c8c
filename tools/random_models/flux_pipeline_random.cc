#include "tools/random_models/flux_pipeline_random.h"

#include <nlohmann/json.hpp>

#include "core/util/status_macros.h"
#include "tools/random_models/clip_random.h"
#include "tools/random_models/flux_random.h"
#include "tools/random_models/pipeline_index_random.h"
#include "tools/random_models/t5_random.h"
#include "tools/random_models/vae_random.h"

namespace diffusiond {

FluxPipelineSizes demo_flux_pipeline_sizes() {
  FluxPipelineSizes s;
  s.clip = demo_clip_text_config();
  s.t5 = demo_t5_config();
  s.transformer = demo_flux_config();
  s.transformer.pooled_projection_dim = s.clip.hidden_size;
  s.transformer.joint_attention_dim = s.t5.d_model;
  s.vae = demo_vae_config();
  s.vae.scaling_factor = kFluxVaeScalingFactor;
  s.vae.shift_factor = kFluxVaeShiftFactor;
  return s;
}

absl::Status write_random_flux_pipeline(const FluxPipelineSizes& sizes, const std::string& folder, uint64_t seed) {
  PipelineIndexSpec index;
  index.class_name = "FluxPipeline";
  index.components = {{"text_encoder", "transformers", "CLIPTextModel"},
                      {"text_encoder_2", "transformers", "T5EncoderModel"},
                      {"tokenizer", "transformers", "CLIPTokenizer"},
                      {"tokenizer_2", "transformers", "T5TokenizerFast"},
                      {"transformer", "diffusers", "FluxTransformer2DModel"},
                      {"vae", "diffusers", "AutoencoderKL"}};
  index.scheduler = nlohmann::ordered_json::parse(flux_scheduler_config_json(sizes.transformer));
  DIFFUSIOND_RETURN_IF_ERROR(write_pipeline_index(folder, index));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_clip_text_encoder(folder + "/text_encoder", sizes.clip, seed));
  DIFFUSIOND_RETURN_IF_ERROR(write_clip_tokenizer(folder + "/tokenizer"));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_t5_encoder(folder + "/text_encoder_2", sizes.t5, seed + 1));
  DIFFUSIOND_RETURN_IF_ERROR(write_t5_tokenizer(folder + "/tokenizer_2", T5TokenizerFiles{}));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_flux(sizes.transformer, folder + "/transformer", seed + 2));
  return write_random_vae(sizes.vae, folder + "/vae", seed + 3);
}

}  // namespace diffusiond
