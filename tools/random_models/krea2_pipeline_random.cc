#include "tools/random_models/krea2_pipeline_random.h"

#include "core/util/status_macros.h"
#include "tools/random_models/krea2_random.h"
#include "tools/random_models/pipeline_index_random.h"
#include "tools/random_models/qwen_tokenizer_random.h"
#include "tools/random_models/qwen_vl_random.h"
#include "tools/random_models/wan_vae_random.h"

namespace diffusiond {

Krea2PipelineSizes demo_krea2_pipeline_sizes() {
  Krea2PipelineSizes s;
  Qwen3VlConfig& q = s.text_encoder;
  q.hidden_size = 128;
  q.intermediate_size = 1024;
  q.num_hidden_layers = 6;
  q.num_attention_heads = 2;
  q.num_key_value_heads = 1;
  q.head_dim = 64;
  q.vocab_size = 512;
  q.max_position_embeddings = 4096;
  q.mrope_section = {12, 10, 10};
  s.text_encoder_select_layers = {2, 3, 4, 5};
  s.transformer = demo_krea2_config();
  s.transformer.text_hidden_dim = q.hidden_size;
  s.transformer.num_text_layers = static_cast<int64_t>(s.text_encoder_select_layers.size());
  s.vae = demo_qwen_image_vae_config();
  return s;
}

absl::Status write_random_krea2_pipeline(const Krea2PipelineSizes& sizes, const std::string& folder, uint64_t seed) {
  PipelineIndexSpec index;
  index.class_name = "Krea2Pipeline";
  index.components = {{"text_encoder", "transformers", "Qwen3VLModel"},
                      {"tokenizer", "transformers", "Qwen2TokenizerFast"},
                      {"transformer", "diffusers", "Krea2Transformer2DModel"},
                      {"vae", "diffusers", "AutoencoderKLQwenImage"}};
  index.settings["text_encoder_select_layers"] = sizes.text_encoder_select_layers;
  index.settings["is_distilled"] = false;
  index.settings["patch_size"] = 2;
  index.scheduler = flow_match_scheduler_config(krea2_default_schedule(false));
  DIFFUSIOND_RETURN_IF_ERROR(write_qwen_tokenizer(folder + "/tokenizer", qwen_image_template_tokenizer(),
                                                  sizes.text_encoder.vocab_size));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_qwen3_vl(sizes.text_encoder, folder + "/text_encoder", seed));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_krea2(sizes.transformer, folder + "/transformer", seed + 1));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_wan_vae(sizes.vae, folder + "/vae", seed + 2));
  // Last: a folder without it is an unfinished one, which the demo writes again.
  return write_pipeline_index(folder, index);
}

}  // namespace diffusiond
