#include "core/lora/lora_rules.h"

#include "absl/strings/str_replace.h"
#include "core/lora/internal/name_pattern.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;

LoraModuleTarget mapped_module(absl::string_view architecture, absl::string_view module, bool flattened) {
  const LoraArchitectureRules* rules = find_lora_rules(architecture);
  EXPECT_NE(rules, nullptr);
  if (rules == nullptr) return {};
  absl::StatusOr<std::optional<LoraModuleTarget>> t = map_lora_module(*rules, module, flattened);
  EXPECT_THAT(t, IsOk());
  if (!t.ok() || !t->has_value()) return {};
  return **t;
}

TEST(NamePattern, PlaceholdersMatchIndicesAndPatchKeys) {
  using lora_internal::fill_name;
  using lora_internal::match_name;
  std::optional<std::vector<std::string>> v = match_name("blocks.{i}.ffn.{i}", "blocks.12.ffn.0", false);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, (std::vector<std::string>{"12", "0"}));
  EXPECT_EQ(fill_name("x.{i}.y.{i}", *v), "x.12.y.0");
  EXPECT_FALSE(match_name("blocks.{i}.ffn", "blocks..ffn", false).has_value());
  EXPECT_FALSE(match_name("blocks.{i}.ffn", "blocks.1.ffn.2", false).has_value());
  EXPECT_FALSE(match_name("blocks.{i}.ffn", "blocks_1_ffn", false).has_value());
  EXPECT_TRUE(match_name("blocks.{i}.ffn", "blocks_1_ffn", true).has_value());
  v = match_name("all_x_embedder.{p}", "all_x_embedder_2-1", true);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->at(0), "2-1");
}

TEST(LoraRules, FluxFusedOriginalsSplitIntoPartsInRowOrder) {
  LoraModuleTarget t = mapped_module("flux", "double_blocks_3_img_attn_qkv", /*flattened=*/true);
  EXPECT_EQ(t.modules, (std::vector<std::string>{"transformer_blocks.3.attn.to_q", "transformer_blocks.3.attn.to_k",
                                                 "transformer_blocks.3.attn.to_v"}));
  t = mapped_module("flux", "single_blocks.7.linear1", /*flattened=*/false);
  EXPECT_EQ(t.modules, (std::vector<std::string>{
                           "single_transformer_blocks.7.attn.to_q", "single_transformer_blocks.7.attn.to_k",
                           "single_transformer_blocks.7.attn.to_v", "single_transformer_blocks.7.proj_mlp"}));
  t = mapped_module("flux", "double_blocks.0.txt_attn.qkv", false);
  EXPECT_EQ(t.modules.at(0), "transformer_blocks.0.attn.add_q_proj");
  EXPECT_FALSE(t.swap_halves);
  t = mapped_module("flux", "final_layer_adaLN_modulation_1", true);
  EXPECT_EQ(t.modules, (std::vector<std::string>{"norm_out.linear"}));
  EXPECT_TRUE(t.swap_halves);
  EXPECT_EQ(mapped_module("flux", "transformer_blocks.1.ff_context.net.0.proj", false).modules,
            (std::vector<std::string>{"transformer_blocks.1.ff_context.net.0.proj"}));
}

// Where upstream's converter drops or leaves unmatched: Z-Image's
// original attention.out (kohya) and fused attention.qkv.
TEST(LoraRules, ZImageOriginalOutAndQkvMap) {
  EXPECT_EQ(mapped_module("z-image", "layers_0_attention_out", true).modules,
            (std::vector<std::string>{"layers.0.attention.to_out.0"}));
  EXPECT_EQ(mapped_module("z-image", "layers.0.attention.out", false).modules,
            (std::vector<std::string>{"layers.0.attention.to_out.0"}));
  EXPECT_EQ(mapped_module("z-image", "layers_0_attention_to_out_0", true).modules,
            (std::vector<std::string>{"layers.0.attention.to_out.0"}));
  EXPECT_EQ(mapped_module("z-image", "noise_refiner.1.attention.qkv", false).modules,
            (std::vector<std::string>{"noise_refiner.1.attention.to_q", "noise_refiner.1.attention.to_k",
                                      "noise_refiner.1.attention.to_v"}));
  EXPECT_EQ(mapped_module("z-image", "context_refiner_0_feed_forward_w2", true).modules,
            (std::vector<std::string>{"context_refiner.0.feed_forward.w2"}));
}

TEST(LoraRules, WanOriginalsAndMusubiNames) {
  EXPECT_EQ(mapped_module("wan", "blocks.4.self_attn.o", false).modules,
            (std::vector<std::string>{"blocks.4.attn1.to_out.0"}));
  EXPECT_EQ(mapped_module("wan", "blocks_4_cross_attn_k", true).modules,
            (std::vector<std::string>{"blocks.4.attn2.to_k"}));
  EXPECT_EQ(mapped_module("wan", "blocks_0_ffn_0", true).modules,
            (std::vector<std::string>{"blocks.0.ffn.net.0.proj"}));
  EXPECT_EQ(mapped_module("wan", "head.head", false).modules, (std::vector<std::string>{"proj_out"}));
}

TEST(LoraRules, QwenImageFlattenedNames) {
  EXPECT_EQ(mapped_module("qwen-image", "transformer_blocks_1_txt_mlp_net_0_proj", true).modules,
            (std::vector<std::string>{"transformer_blocks.1.txt_mlp.net.0.proj"}));
  EXPECT_EQ(mapped_module("qwen-image", "norm_out_linear", true).modules,
            (std::vector<std::string>{"norm_out.linear"}));
  EXPECT_EQ(mapped_module("qwen-image", "transformer_blocks_0_img_mod_1", true).modules,
            (std::vector<std::string>{"transformer_blocks.0.img_mod.1"}));
}

TEST(LoraRules, UnknownModulesMapToNothing) {
  const LoraArchitectureRules* flux = find_lora_rules("flux");
  ASSERT_NE(flux, nullptr);
  absl::StatusOr<std::optional<LoraModuleTarget>> t = map_lora_module(*flux, "layers.0.attention.to_q", false);
  ASSERT_THAT(t, IsOk());
  EXPECT_FALSE(t->has_value());
  EXPECT_EQ(find_lora_rules("vae"), nullptr);
}

// Every name of every architecture, dotted or flattened, maps to one
// target: no flattened name is ambiguous, and each module maps to itself.
TEST(LoraRules, EveryNameMapsUnambiguously) {
  for (const LoraArchitectureRules* rules : lora_architectures()) {
    std::vector<absl::string_view> names(rules->modules.begin(), rules->modules.end());
    for (const LoraModuleRule& r : rules->originals) names.push_back(r.from);
    for (absl::string_view name : names) {
      const std::string concrete = absl::StrReplaceAll(name, {{"{i}", "3"}, {"{p}", "2-1"}});
      for (bool flattened : {false, true}) {
        const std::string written = flattened ? absl::StrReplaceAll(concrete, {{".", "_"}}) : concrete;
        absl::StatusOr<std::optional<LoraModuleTarget>> t = map_lora_module(*rules, written, flattened);
        ASSERT_THAT(t, IsOk()) << rules->architecture << " " << written;
        ASSERT_TRUE(t->has_value()) << rules->architecture << " " << written;
      }
    }
    for (absl::string_view module : rules->modules) {
      const std::string concrete = absl::StrReplaceAll(module, {{"{i}", "3"}, {"{p}", "2-1"}});
      absl::StatusOr<std::optional<LoraModuleTarget>> t = map_lora_module(*rules, concrete, false);
      ASSERT_THAT(t, IsOk());
      EXPECT_EQ((*t)->modules, std::vector<std::string>{concrete});
    }
  }
}

}  // namespace
}  // namespace diffusiond
