// FLUX.1's LoRA names: FluxTransformer2DModel's linears as FluxModel
// multiplies them (diffusers naming, core/models/flux/flux_model.cc), and
// Black Forest Labs' original names as upstream's
// _convert_kohya_flux_lora_to_diffusers maps them — with linear1's parts
// sized by the model's own weights instead of FLUX.1's hard-coded
// [3072, 3072, 3072, 12288].
#include "core/lora/lora_rules.h"

namespace diffusiond {

const LoraArchitectureRules& flux_lora_rules() {
  static const auto* const rules = new LoraArchitectureRules{
      "flux",
      {
          "transformer_blocks.{i}.norm1.linear",
          "transformer_blocks.{i}.norm1_context.linear",
          "transformer_blocks.{i}.attn.to_q",
          "transformer_blocks.{i}.attn.to_k",
          "transformer_blocks.{i}.attn.to_v",
          "transformer_blocks.{i}.attn.add_q_proj",
          "transformer_blocks.{i}.attn.add_k_proj",
          "transformer_blocks.{i}.attn.add_v_proj",
          "transformer_blocks.{i}.attn.to_out.0",
          "transformer_blocks.{i}.attn.to_add_out",
          "transformer_blocks.{i}.ff.net.0.proj",
          "transformer_blocks.{i}.ff.net.2",
          "transformer_blocks.{i}.ff_context.net.0.proj",
          "transformer_blocks.{i}.ff_context.net.2",
          "single_transformer_blocks.{i}.norm.linear",
          "single_transformer_blocks.{i}.attn.to_q",
          "single_transformer_blocks.{i}.attn.to_k",
          "single_transformer_blocks.{i}.attn.to_v",
          "single_transformer_blocks.{i}.proj_mlp",
          "single_transformer_blocks.{i}.proj_out",
          "x_embedder",
          "context_embedder",
          "time_text_embed.timestep_embedder.linear_1",
          "time_text_embed.timestep_embedder.linear_2",
          "time_text_embed.guidance_embedder.linear_1",
          "time_text_embed.guidance_embedder.linear_2",
          "time_text_embed.text_embedder.linear_1",
          "time_text_embed.text_embedder.linear_2",
          "norm_out.linear",
          "proj_out",
      },
      {
          {"double_blocks.{i}.img_attn.qkv",
           {"transformer_blocks.{i}.attn.to_q", "transformer_blocks.{i}.attn.to_k",
            "transformer_blocks.{i}.attn.to_v"}},
          {"double_blocks.{i}.img_attn.proj", {"transformer_blocks.{i}.attn.to_out.0"}},
          {"double_blocks.{i}.img_mlp.0", {"transformer_blocks.{i}.ff.net.0.proj"}},
          {"double_blocks.{i}.img_mlp.2", {"transformer_blocks.{i}.ff.net.2"}},
          {"double_blocks.{i}.img_mod.lin", {"transformer_blocks.{i}.norm1.linear"}},
          {"double_blocks.{i}.txt_attn.qkv",
           {"transformer_blocks.{i}.attn.add_q_proj", "transformer_blocks.{i}.attn.add_k_proj",
            "transformer_blocks.{i}.attn.add_v_proj"}},
          {"double_blocks.{i}.txt_attn.proj", {"transformer_blocks.{i}.attn.to_add_out"}},
          {"double_blocks.{i}.txt_mlp.0", {"transformer_blocks.{i}.ff_context.net.0.proj"}},
          {"double_blocks.{i}.txt_mlp.2", {"transformer_blocks.{i}.ff_context.net.2"}},
          {"double_blocks.{i}.txt_mod.lin", {"transformer_blocks.{i}.norm1_context.linear"}},
          {"single_blocks.{i}.linear1",
           {"single_transformer_blocks.{i}.attn.to_q", "single_transformer_blocks.{i}.attn.to_k",
            "single_transformer_blocks.{i}.attn.to_v", "single_transformer_blocks.{i}.proj_mlp"}},
          {"single_blocks.{i}.linear2", {"single_transformer_blocks.{i}.proj_out"}},
          {"single_blocks.{i}.modulation.lin", {"single_transformer_blocks.{i}.norm.linear"}},
          {"img_in", {"x_embedder"}},
          {"txt_in", {"context_embedder"}},
          {"time_in.in_layer", {"time_text_embed.timestep_embedder.linear_1"}},
          {"time_in.out_layer", {"time_text_embed.timestep_embedder.linear_2"}},
          {"guidance_in.in_layer", {"time_text_embed.guidance_embedder.linear_1"}},
          {"guidance_in.out_layer", {"time_text_embed.guidance_embedder.linear_2"}},
          {"vector_in.in_layer", {"time_text_embed.text_embedder.linear_1"}},
          {"vector_in.out_layer", {"time_text_embed.text_embedder.linear_2"}},
          {"final_layer.linear", {"proj_out"}},
          {"final_layer.adaLN_modulation.1", {"norm_out.linear"}, /*swap_halves=*/true},
      },
  };
  return *rules;
}

}  // namespace diffusiond
