#include "tools/random_models/qwen_image_pipeline_random.h"

#include "core/util/status_macros.h"
#include "tools/random_models/pipeline_index_random.h"
#include "tools/random_models/qwen_image_random.h"
#include "tools/random_models/qwen_tokenizer_random.h"
#include "tools/random_models/qwen_vl_random.h"
#include "tools/random_models/wan_vae_random.h"

namespace diffusiond {

QwenImagePipelineSizes demo_qwen_image_pipeline_sizes() {
  QwenImagePipelineSizes s;
  Qwen25VlConfig& q = s.text_encoder;
  q.hidden_size = 256;
  q.intermediate_size = 768;
  q.num_hidden_layers = 4;
  q.num_attention_heads = 2;
  q.num_key_value_heads = 1;
  q.vocab_size = 512;
  q.max_position_embeddings = 4096;
  q.mrope_section = {16, 24, 24};
  s.transformer = demo_qwen_image_config();
  s.transformer.num_layers = 2;
  s.transformer.joint_attention_dim = q.hidden_size;
  s.vae = demo_qwen_image_vae_config();
  return s;
}

absl::Status write_random_qwen_image_pipeline(const QwenImagePipelineSizes& sizes, const std::string& folder,
                                              uint64_t seed) {
  PipelineIndexSpec index;
  index.class_name = "QwenImagePipeline";
  index.components = {{"text_encoder", "transformers", "Qwen2_5_VLForConditionalGeneration"},
                      {"tokenizer", "transformers", "Qwen2Tokenizer"},
                      {"transformer", "diffusers", "QwenImageTransformer2DModel"},
                      {"vae", "diffusers", "AutoencoderKLQwenImage"}};
  index.scheduler = flow_match_scheduler_config(qwen_image_default_schedule());
  DIFFUSIOND_RETURN_IF_ERROR(write_qwen_tokenizer(folder + "/tokenizer", qwen_image_template_tokenizer(),
                                                  sizes.text_encoder.vocab_size));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_qwen25_vl(sizes.text_encoder, folder + "/text_encoder", seed));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_qwen_image(sizes.transformer, folder + "/transformer", seed + 1));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_wan_vae(sizes.vae, folder + "/vae", seed + 2));
  // Last: a folder without it is an unfinished one, which the demo writes again.
  return write_pipeline_index(folder, index);
}

}  // namespace diffusiond
