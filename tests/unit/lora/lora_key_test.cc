#include "core/lora/lora_key.h"

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

TEST(LoraKey, DiffusersKeysNameTheirModuleAndTensor) {
  std::optional<LoraKey> k = parse_lora_key("transformer.transformer_blocks.0.attn.to_q.lora_A.weight");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->format, LoraFormat::kDiffusers);
  EXPECT_EQ(k->section, "transformer");
  EXPECT_FALSE(k->text_encoder);
  EXPECT_FALSE(k->flattened);
  EXPECT_EQ(k->module, "transformer_blocks.0.attn.to_q");
  EXPECT_EQ(k->stem, "transformer.transformer_blocks.0.attn.to_q");
  EXPECT_EQ(k->tensor, LoraTensor::kDown);

  k = parse_lora_key("transformer.blocks.1.ffn.net.2.lora_B.weight");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->tensor, LoraTensor::kUp);
  k = parse_lora_key("transformer.blocks.1.ffn.net.2.lora_B.default.weight");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->module, "blocks.1.ffn.net.2");
  EXPECT_EQ(k->tensor, LoraTensor::kUp);

  k = parse_lora_key("text_encoder.text_model.encoder.layers.0.self_attn.q_proj.lora_A.weight");
  ASSERT_TRUE(k.has_value());
  EXPECT_TRUE(k->text_encoder);
  EXPECT_EQ(k->section, "text_encoder");
  EXPECT_EQ(k->module, "text_model.encoder.layers.0.self_attn.q_proj");
}

TEST(LoraKey, KohyaKeysAreFlattenedToTheFirstDot) {
  std::optional<LoraKey> k = parse_lora_key("lora_unet_double_blocks_0_img_attn_qkv.lora_down.weight");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->format, LoraFormat::kKohya);
  EXPECT_EQ(k->section, "lora_unet");
  EXPECT_TRUE(k->flattened);
  EXPECT_EQ(k->module, "double_blocks_0_img_attn_qkv");
  EXPECT_EQ(k->stem, "lora_unet_double_blocks_0_img_attn_qkv");
  EXPECT_EQ(k->tensor, LoraTensor::kDown);

  k = parse_lora_key("lora_unet_double_blocks_0_img_attn_qkv.alpha");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->tensor, LoraTensor::kAlpha);
  EXPECT_EQ(k->stem, "lora_unet_double_blocks_0_img_attn_qkv");

  k = parse_lora_key("lora_te1_text_model_encoder_layers_0_self_attn_q_proj.lora_up.weight");
  ASSERT_TRUE(k.has_value());
  EXPECT_TRUE(k->text_encoder);
  EXPECT_EQ(k->section, "lora_te1");
  EXPECT_EQ(k->tensor, LoraTensor::kUp);

  k = parse_lora_key("lora_unet_double_blocks_0_img_attn_proj.dora_scale");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->tensor, LoraTensor::kDoraScale);
}

TEST(LoraKey, ComfyUiKeysKeepDotsAndNameTheirEncoder) {
  std::optional<LoraKey> k = parse_lora_key("diffusion_model.single_blocks.1.linear2.lora_up.weight");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->format, LoraFormat::kComfyUi);
  EXPECT_EQ(k->module, "single_blocks.1.linear2");
  EXPECT_EQ(k->tensor, LoraTensor::kUp);

  k = parse_lora_key("text_encoders.clip_l.transformer.text_model.encoder.layers.0.self_attn.q_proj.alpha");
  ASSERT_TRUE(k.has_value());
  EXPECT_TRUE(k->text_encoder);
  EXPECT_EQ(k->section, "clip_l");
  EXPECT_EQ(k->module, "text_model.encoder.layers.0.self_attn.q_proj");
  EXPECT_EQ(k->tensor, LoraTensor::kAlpha);
}

TEST(LoraKey, UnknownSuffixesAreOtherAndKeepTheWholeKey) {
  std::optional<LoraKey> k = parse_lora_key("diffusion_model.blocks.0.self_attn.q.diff_b");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->tensor, LoraTensor::kOther);
  EXPECT_EQ(k->stem, "diffusion_model.blocks.0.self_attn.q.diff_b");
  k = parse_lora_key("transformer.blocks.0.attn1.to_q.lora_B.bias");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->tensor, LoraTensor::kOther);
  k = parse_lora_key("lora_unet_blocks_0_self_attn_q.lora_mid.weight");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->tensor, LoraTensor::kOther);
}

TEST(LoraKey, KeysOfNoLayoutAreNothing) {
  EXPECT_FALSE(parse_lora_key("model.diffusion_model.blocks.0.weight").has_value());
  EXPECT_FALSE(parse_lora_key("blocks.0.attn1.to_q.lora_A.weight").has_value());
  EXPECT_FALSE(parse_lora_key("text_encoders.clip_l").has_value());
}

TEST(LoraKey, FormatNames) {
  EXPECT_EQ(lora_format_name(LoraFormat::kDiffusers), "diffusers");
  EXPECT_EQ(lora_format_name(LoraFormat::kKohya), "kohya");
  EXPECT_EQ(lora_format_name(LoraFormat::kComfyUi), "ComfyUI");
}

}  // namespace
}  // namespace diffusiond
