#include "tools/random_models/pipeline_random.h"

#include "core/util/status_macros.h"
#include "tools/random_models/pipeline_index_random.h"
#include "tools/random_models/qwen3_random.h"
#include "tools/random_models/qwen_tokenizer_random.h"
#include "tools/random_models/vae_random.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {

PipelineSizes demo_pipeline_sizes() {
  PipelineSizes s;
  Qwen3Config& q = s.text_encoder;
  q.hidden_size = 128;
  q.intermediate_size = 256;
  q.num_hidden_layers = 2;
  q.num_attention_heads = 4;
  q.num_key_value_heads = 2;
  q.head_dim = 32;
  q.vocab_size = 512;
  s.transformer = demo_z_image_config();
  s.transformer.cap_feat_dim = q.hidden_size;
  s.vae = demo_vae_config();
  return s;
}

absl::Status write_random_pipeline(const PipelineSizes& sizes, const std::string& folder, uint64_t seed,
                                   const torch::Device& device) {
  PipelineIndexSpec index;
  index.class_name = "ZImagePipeline";
  index.components = {{"text_encoder", "transformers", "Qwen3Model"},
                      {"tokenizer", "transformers", "Qwen2Tokenizer"},
                      {"transformer", "diffusers", "ZImageTransformer2DModel"},
                      {"vae", "diffusers", "AutoencoderKL"}};
  index.scheduler = flow_match_scheduler_config(z_image_default_schedule());
  DIFFUSIOND_RETURN_IF_ERROR(write_pipeline_index(folder, index));
  DIFFUSIOND_RETURN_IF_ERROR(
      write_qwen_tokenizer(folder + "/tokenizer", QwenTokenizerFiles{}, sizes.text_encoder.vocab_size));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_qwen3(sizes.text_encoder, folder + "/text_encoder", seed, device));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_z_image(sizes.transformer, folder + "/transformer", seed + 1, device));
  return write_random_vae(sizes.vae, folder + "/vae", seed + 2, device);
}

}  // namespace diffusiond
