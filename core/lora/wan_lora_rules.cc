// Wan's LoRA names: WanTransformer3DModel's linears as WanModel multiplies
// them (core/models/wan/wan_model.cc), and Wan's original names as
// upstream's _convert_non_diffusers_wan_lora_to_diffusers and
// _convert_musubi_wan_lora_to_diffusers map them. Nothing is fused. The
// image-conditioning names (cross_attn.k_img, img_emb) map too; a model
// without those weights refuses them when an adapter is attached.
#include "core/lora/lora_rules.h"

namespace diffusiond {

const LoraArchitectureRules& wan_lora_rules() {
  static const auto* const rules = new LoraArchitectureRules{
      "wan",
      {
          "blocks.{i}.attn1.to_q",
          "blocks.{i}.attn1.to_k",
          "blocks.{i}.attn1.to_v",
          "blocks.{i}.attn1.to_out.0",
          "blocks.{i}.attn2.to_q",
          "blocks.{i}.attn2.to_k",
          "blocks.{i}.attn2.to_v",
          "blocks.{i}.attn2.to_out.0",
          "blocks.{i}.attn2.add_k_proj",
          "blocks.{i}.attn2.add_v_proj",
          "blocks.{i}.ffn.net.0.proj",
          "blocks.{i}.ffn.net.2",
          "condition_embedder.time_embedder.linear_1",
          "condition_embedder.time_embedder.linear_2",
          "condition_embedder.time_proj",
          "condition_embedder.text_embedder.linear_1",
          "condition_embedder.text_embedder.linear_2",
          "condition_embedder.image_embedder.ff.net.0.proj",
          "condition_embedder.image_embedder.ff.net.2",
          "proj_out",
      },
      {
          {"blocks.{i}.self_attn.q", {"blocks.{i}.attn1.to_q"}},
          {"blocks.{i}.self_attn.k", {"blocks.{i}.attn1.to_k"}},
          {"blocks.{i}.self_attn.v", {"blocks.{i}.attn1.to_v"}},
          {"blocks.{i}.self_attn.o", {"blocks.{i}.attn1.to_out.0"}},
          {"blocks.{i}.cross_attn.q", {"blocks.{i}.attn2.to_q"}},
          {"blocks.{i}.cross_attn.k", {"blocks.{i}.attn2.to_k"}},
          {"blocks.{i}.cross_attn.v", {"blocks.{i}.attn2.to_v"}},
          {"blocks.{i}.cross_attn.o", {"blocks.{i}.attn2.to_out.0"}},
          {"blocks.{i}.cross_attn.k_img", {"blocks.{i}.attn2.add_k_proj"}},
          {"blocks.{i}.cross_attn.v_img", {"blocks.{i}.attn2.add_v_proj"}},
          {"blocks.{i}.ffn.0", {"blocks.{i}.ffn.net.0.proj"}},
          {"blocks.{i}.ffn.2", {"blocks.{i}.ffn.net.2"}},
          {"head.head", {"proj_out"}},
          {"time_projection.1", {"condition_embedder.time_proj"}},
          {"time_embedding.0", {"condition_embedder.time_embedder.linear_1"}},
          {"time_embedding.2", {"condition_embedder.time_embedder.linear_2"}},
          {"text_embedding.0", {"condition_embedder.text_embedder.linear_1"}},
          {"text_embedding.2", {"condition_embedder.text_embedder.linear_2"}},
          {"img_emb.proj.1", {"condition_embedder.image_embedder.ff.net.0.proj"}},
          {"img_emb.proj.3", {"condition_embedder.image_embedder.ff.net.2"}},
      },
  };
  return *rules;
}

}  // namespace diffusiond
