#include "tools/random_models/wan_pipeline_random.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"
#include "tools/random_models/t5_random.h"
#include "tools/random_models/wan_random.h"
#include "tools/random_models/wan_vae_random.h"

namespace diffusiond {
namespace {

using json = nlohmann::ordered_json;

// model_index.json as WanPipeline's save_pretrained writes it: Wan 2.1's
// transformer_2 and boundary_ratio are null.
std::string wan_model_index_json(bool two_experts, double boundary_ratio) {
  json j;
  j["_class_name"] = "WanPipeline";
  j["boundary_ratio"] = two_experts ? json(boundary_ratio) : json(nullptr);
  j["expand_timesteps"] = false;
  j["scheduler"] = {"diffusers", "UniPCMultistepScheduler"};
  j["text_encoder"] = {"transformers", "UMT5EncoderModel"};
  j["tokenizer"] = {"transformers", "T5TokenizerFast"};
  j["transformer"] = {"diffusers", "WanTransformer3DModel"};
  j["transformer_2"] = two_experts ? json({"diffusers", "WanTransformer3DModel"}) : json({nullptr, nullptr});
  j["vae"] = {"diffusers", "AutoencoderKLWan"};
  return j.dump(2) + "\n";
}

}  // namespace

WanPipelineSizes demo_wan_pipeline_sizes() {
  WanPipelineSizes s;
  T5Config& t = s.text_encoder;
  t.umt5 = true;
  t.vocab_size = 704;  // the tokenizer's 384 pieces and UMT5's 300 sentinels
  t.d_model = 64;
  t.d_kv = 16;
  t.num_heads = 4;
  t.d_ff = 128;
  t.num_layers = 2;
  t.feed_forward = T5FeedForward::kGatedGelu;
  WanConfig& w = s.transformer;
  w.num_attention_heads = 2;
  w.attention_head_dim = 32;
  w.text_dim = t.d_model;
  w.ffn_dim = 128;
  w.num_layers = 2;
  s.vae = demo_wan_vae_config();
  return s;
}

absl::Status write_random_wan_pipeline(const WanPipelineSizes& sizes, const std::string& folder, uint64_t seed) {
  if (sizes.transformer.text_dim != sizes.text_encoder.d_model) {
    return absl::InvalidArgumentError(absl::StrCat("the transformer's text_dim ", sizes.transformer.text_dim,
                                                   " is not the text encoder's width ", sizes.text_encoder.d_model));
  }
  const bool two_experts = sizes.boundary_ratio > 0;
  DIFFUSIOND_RETURN_IF_ERROR(
      write_text_file(folder + "/model_index.json", wan_model_index_json(two_experts, sizes.boundary_ratio)));
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/scheduler/scheduler_config.json",
                                             R"({"_class_name": "UniPCMultistepScheduler", "flow_shift": 3.0,)"
                                             R"( "num_train_timesteps": 1000, "prediction_type": "flow_prediction",)"
                                             R"( "use_flow_sigmas": true})"
                                             "\n"));
  T5TokenizerFiles tokenizer;
  tokenizer.byte_fallback = true;  // its 256 byte pieces and the corpus's characters need 384
  tokenizer.train_vocab_size = 384;
  tokenizer.extra_ids = 300;
  DIFFUSIOND_RETURN_IF_ERROR(write_t5_tokenizer(folder + "/tokenizer", tokenizer));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_t5_encoder(folder + "/text_encoder", sizes.text_encoder, seed));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_wan(sizes.transformer, folder + "/transformer", seed + 1));
  if (two_experts) {
    DIFFUSIOND_RETURN_IF_ERROR(write_random_wan(sizes.transformer, folder + "/transformer_2", seed + 3));
  }
  return write_random_wan_vae(sizes.vae, folder + "/vae", seed + 2);
}

}  // namespace diffusiond
