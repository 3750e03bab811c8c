// Z-Image's LoRA names: ZImageTransformer2DModel's linears as ZImageModel
// multiplies them (core/models/z_image/z_image_model.cc), and the original
// checkpoint's names as z_image_canonical_name maps them. Upstream's
// converter has no rule for the fused "attention.qkv" (PEFT then matches no
// module and applies nothing) and drops kohya's "attention_out"; both map
// here, qkv onto its three parts.
#include "core/lora/lora_rules.h"

namespace diffusiond {

const LoraArchitectureRules& z_image_lora_rules() {
  static const auto* const rules = new LoraArchitectureRules{
      "z-image",
      {
          "layers.{i}.attention.to_q",
          "layers.{i}.attention.to_k",
          "layers.{i}.attention.to_v",
          "layers.{i}.attention.to_out.0",
          "layers.{i}.feed_forward.w1",
          "layers.{i}.feed_forward.w2",
          "layers.{i}.feed_forward.w3",
          "layers.{i}.adaLN_modulation.0",
          "noise_refiner.{i}.attention.to_q",
          "noise_refiner.{i}.attention.to_k",
          "noise_refiner.{i}.attention.to_v",
          "noise_refiner.{i}.attention.to_out.0",
          "noise_refiner.{i}.feed_forward.w1",
          "noise_refiner.{i}.feed_forward.w2",
          "noise_refiner.{i}.feed_forward.w3",
          "noise_refiner.{i}.adaLN_modulation.0",
          "context_refiner.{i}.attention.to_q",
          "context_refiner.{i}.attention.to_k",
          "context_refiner.{i}.attention.to_v",
          "context_refiner.{i}.attention.to_out.0",
          "context_refiner.{i}.feed_forward.w1",
          "context_refiner.{i}.feed_forward.w2",
          "context_refiner.{i}.feed_forward.w3",
          "all_x_embedder.{p}",
          "all_final_layer.{p}.linear",
          "all_final_layer.{p}.adaLN_modulation.1",
          "t_embedder.mlp.0",
          "t_embedder.mlp.2",
          "cap_embedder.1",
      },
      {
          {"layers.{i}.attention.qkv",
           {"layers.{i}.attention.to_q", "layers.{i}.attention.to_k", "layers.{i}.attention.to_v"}},
          {"noise_refiner.{i}.attention.qkv",
           {"noise_refiner.{i}.attention.to_q", "noise_refiner.{i}.attention.to_k",
            "noise_refiner.{i}.attention.to_v"}},
          {"context_refiner.{i}.attention.qkv",
           {"context_refiner.{i}.attention.to_q", "context_refiner.{i}.attention.to_k",
            "context_refiner.{i}.attention.to_v"}},
          {"layers.{i}.attention.out", {"layers.{i}.attention.to_out.0"}},
          {"noise_refiner.{i}.attention.out", {"noise_refiner.{i}.attention.to_out.0"}},
          {"context_refiner.{i}.attention.out", {"context_refiner.{i}.attention.to_out.0"}},
          // The original single file's patch key is 2-1 (z_image_canonical_name).
          {"x_embedder", {"all_x_embedder.2-1"}},
          {"final_layer.linear", {"all_final_layer.2-1.linear"}},
          {"final_layer.adaLN_modulation.1", {"all_final_layer.2-1.adaLN_modulation.1"}},
      },
  };
  return *rules;
}

}  // namespace diffusiond
