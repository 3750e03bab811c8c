// Qwen-Image's LoRA names: QwenImageTransformer2DModel's linears as
// QwenImageModel multiplies them (core/models/qwen_image/
// qwen_image_model.cc). Its original names are the diffusers ones: nothing
// is fused and nothing renamed.
#include "core/lora/lora_rules.h"

namespace diffusiond {

const LoraArchitectureRules& qwen_image_lora_rules() {
  static const auto* const rules = new LoraArchitectureRules{
      "qwen-image",
      {
          "transformer_blocks.{i}.img_mod.1",
          "transformer_blocks.{i}.txt_mod.1",
          "transformer_blocks.{i}.attn.to_q",
          "transformer_blocks.{i}.attn.to_k",
          "transformer_blocks.{i}.attn.to_v",
          "transformer_blocks.{i}.attn.add_q_proj",
          "transformer_blocks.{i}.attn.add_k_proj",
          "transformer_blocks.{i}.attn.add_v_proj",
          "transformer_blocks.{i}.attn.to_out.0",
          "transformer_blocks.{i}.attn.to_add_out",
          "transformer_blocks.{i}.img_mlp.net.0.proj",
          "transformer_blocks.{i}.img_mlp.net.2",
          "transformer_blocks.{i}.txt_mlp.net.0.proj",
          "transformer_blocks.{i}.txt_mlp.net.2",
          "time_text_embed.timestep_embedder.linear_1",
          "time_text_embed.timestep_embedder.linear_2",
          "img_in",
          "txt_in",
          "norm_out.linear",
          "proj_out",
      },
      {},
  };
  return *rules;
}

}  // namespace diffusiond
