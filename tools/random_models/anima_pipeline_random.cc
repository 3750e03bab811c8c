#include "tools/random_models/anima_pipeline_random.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "tools/random_models/anima_conditioner_random.h"
#include "tools/random_models/cosmos_random.h"
#include "tools/random_models/pipeline_index_random.h"
#include "tools/random_models/pipeline_random.h"
#include "tools/random_models/qwen3_random.h"
#include "tools/random_models/qwen_tokenizer_random.h"
#include "tools/random_models/t5_random.h"
#include "tools/random_models/wan_vae_random.h"

namespace diffusiond {
namespace {

// What a wrong pairing would otherwise only show at the first Generate.
absl::Status check_anima_sizes_agree(const AnimaPipelineSizes& s) {
  if (s.text_conditioner.source_dim != s.text_encoder.hidden_size) {
    return absl::InvalidArgumentError(absl::StrCat("the text conditioner's source_dim ", s.text_conditioner.source_dim,
                                                   " is not the text encoder's width ", s.text_encoder.hidden_size));
  }
  if (s.text_conditioner.target_dim != s.transformer.text_embed_dim) {
    return absl::InvalidArgumentError(absl::StrCat("the text conditioner's target_dim ", s.text_conditioner.target_dim,
                                                   " is not the transformer's text_embed_dim ",
                                                   s.transformer.text_embed_dim));
  }
  if (s.vae.z_dim != s.transformer.in_channels || s.vae.z_dim != s.transformer.out_channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("the VAE's z_dim ", s.vae.z_dim, " is not the transformer's latent channels ",
                     s.transformer.in_channels, " in, ", s.transformer.out_channels, " out"));
  }
  return absl::OkStatus();
}

}  // namespace

AnimaPipelineSizes demo_anima_pipeline_sizes() {
  AnimaPipelineSizes s;
  s.text_encoder = demo_pipeline_sizes().text_encoder;
  s.transformer = demo_cosmos_config();
  s.text_conditioner = demo_anima_conditioner_config();
  s.text_conditioner.source_dim = s.text_encoder.hidden_size;
  s.text_conditioner.target_dim = s.transformer.text_embed_dim;
  s.vae = demo_qwen_image_vae_config();
  return s;
}

absl::Status write_random_anima_pipeline(const AnimaPipelineSizes& sizes, const std::string& folder, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(check_anima_sizes_agree(sizes));
  PipelineIndexSpec index;
  index.class_name = "AnimaModularPipeline";
  index.blocks_class_name = "AnimaAutoBlocks";
  index.components = {{"text_encoder", "transformers", "Qwen3Model"},
                      {"tokenizer", "transformers", "Qwen2Tokenizer"},
                      {"t5_tokenizer", "transformers", "T5Tokenizer"},
                      {"text_conditioner", "diffusers", "AnimaTextConditioner"},
                      {"transformer", "diffusers", "CosmosTransformer3DModel"},
                      {"vae", "diffusers", "AutoencoderKLQwenImage"}};
  index.scheduler = flow_match_scheduler_config(cosmos_default_schedule());
  DIFFUSIOND_RETURN_IF_ERROR(
      write_qwen_tokenizer(folder + "/tokenizer", QwenTokenizerFiles{}, sizes.text_encoder.vocab_size));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_qwen3(sizes.text_encoder, folder + "/text_encoder", seed));
  // T5's own (pieces, then 100 sentinels), as Anima's t5_tokenizer/ is.
  DIFFUSIOND_RETURN_IF_ERROR(write_t5_tokenizer(folder + "/t5_tokenizer", T5TokenizerFiles{}));
  DIFFUSIOND_RETURN_IF_ERROR(
      write_random_anima_conditioner(sizes.text_conditioner, folder + "/text_conditioner", seed + 3));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_cosmos(sizes.transformer, folder + "/transformer", seed + 1));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_wan_vae(sizes.vae, folder + "/vae", seed + 2));
  // Last: a folder without it is an unfinished one, which the demo writes again.
  return write_pipeline_index(folder, index);
}

}  // namespace diffusiond
