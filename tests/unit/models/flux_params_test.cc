// The FLUX key map (original / ComfyUI names to diffusers names, fused
// tensors and swapped halves), the precision declaration, and the load-time
// layout conversion on dense and FP8 weights.
#include "core/models/flux/flux_params.h"

#include <set>

#include "core/models/flux/flux_weight_layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

FluxConfig tiny() {
  FluxConfig c;
  c.num_attention_heads = 2;
  c.attention_head_dim = 16;
  c.axes_dims_rope = {4, 6, 6};
  c.num_layers = 1;
  c.num_single_layers = 1;
  c.joint_attention_dim = 8;
  c.pooled_projection_dim = 8;
  c.in_channels = c.out_channels = 4;
  return c;
}

TEST(FluxParams, MapsOriginalNames) {
  const std::pair<const char*, const char*> cases[] = {
      {"img_in.weight", "x_embedder.weight"},
      {"txt_in.bias", "context_embedder.bias"},
      {"time_in.out_layer.weight", "time_text_embed.timestep_embedder.linear_2.weight"},
      {"vector_in.in_layer.bias", "time_text_embed.text_embedder.linear_1.bias"},
      {"guidance_in.in_layer.weight", "time_text_embed.guidance_embedder.linear_1.weight"},
      {"double_blocks.12.img_mod.lin.weight", "transformer_blocks.12.norm1.linear.weight"},
      {"double_blocks.0.txt_mod.lin.bias", "transformer_blocks.0.norm1_context.linear.bias"},
      {"double_blocks.3.img_attn.qkv.weight", "transformer_blocks.3.attn.qkv.weight"},
      {"double_blocks.3.txt_attn.qkv.bias", "transformer_blocks.3.attn.add_qkv_proj.bias"},
      {"double_blocks.1.img_attn.norm.query_norm.scale", "transformer_blocks.1.attn.norm_q.weight"},
      {"double_blocks.1.txt_attn.norm.key_norm.scale", "transformer_blocks.1.attn.norm_added_k.weight"},
      {"double_blocks.1.img_attn.proj.weight", "transformer_blocks.1.attn.to_out.0.weight"},
      {"double_blocks.1.txt_attn.proj.bias", "transformer_blocks.1.attn.to_add_out.bias"},
      {"double_blocks.1.img_mlp.0.weight", "transformer_blocks.1.ff.net.0.proj.weight"},
      {"double_blocks.1.txt_mlp.2.bias", "transformer_blocks.1.ff_context.net.2.bias"},
      {"single_blocks.37.modulation.lin.weight", "single_transformer_blocks.37.norm.linear.weight"},
      {"single_blocks.0.linear1.bias", "single_transformer_blocks.0.linear1.bias"},
      {"single_blocks.0.linear2.weight", "single_transformer_blocks.0.proj_out.weight"},
      {"single_blocks.0.norm.key_norm.scale", "single_transformer_blocks.0.attn.norm_k.weight"},
      {"final_layer.linear.weight", "proj_out.weight"},
      {"final_layer.adaLN_modulation.1.bias", "norm_out.linear_shift_scale.bias"},
      {"model.diffusion_model.img_in.weight", "x_embedder.weight"},
      {"model.diffusion_model.single_blocks.2.linear2.bias", "single_transformer_blocks.2.proj_out.bias"},
      // diffusers names pass through
      {"transformer_blocks.0.attn.to_q.weight", "transformer_blocks.0.attn.to_q.weight"},
      {"norm_out.linear.weight", "norm_out.linear.weight"},
  };
  for (const auto& [from, to] : cases) EXPECT_EQ(flux_canonical_name(from), to) << from;
}

TEST(FluxParams, SplitsAndSwapsCoverTheTable) {
  const FluxConfig c = tiny();
  const std::vector<std::string> loaded = {
      "transformer_blocks.0.attn.qkv.weight", "transformer_blocks.0.attn.add_qkv_proj.bias",
      "single_transformer_blocks.0.linear1.weight", "norm_out.linear_shift_scale.weight", "x_embedder.weight"};
  const std::vector<FusedSplit> splits = flux_fused_splits(c, loaded);
  ASSERT_EQ(splits.size(), 3u);
  EXPECT_EQ(splits[0].parts[2], std::make_pair(std::string("transformer_blocks.0.attn.to_v.weight"), int64_t{32}));
  EXPECT_EQ(splits[1].parts[0].first, "transformer_blocks.0.attn.add_q_proj.bias");
  ASSERT_EQ(splits[2].parts.size(), 4u);
  EXPECT_EQ(splits[2].parts[3], std::make_pair(std::string("single_transformer_blocks.0.proj_mlp.weight"), int64_t{128}));
  const auto swaps = flux_swapped_halves(loaded);
  ASSERT_EQ(swaps.size(), 1u);
  EXPECT_EQ(swaps[0].second, "norm_out.linear.weight");
}

TEST(FluxParams, PrecisionDeclarationKeepsModulationsAndOutputDense) {
  Fp8Options fp8;
  fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<PrecisionPolicy> policy = PrecisionPolicy::create(fp8, flux_precision_declaration());
  ASSERT_THAT(policy, IsOk());
  const auto kind = [&](const char* name) { return policy->decide(name, ParamKind::kLayerWeight).kind; };
  using K = StorageDecision::Kind;
  EXPECT_EQ(kind("transformer_blocks.0.norm1.linear.weight"), K::kCompute);
  EXPECT_EQ(kind("single_transformer_blocks.0.norm.linear.weight"), K::kCompute);
  EXPECT_EQ(kind("norm_out.linear_shift_scale.weight"), K::kCompute);
  EXPECT_EQ(kind("proj_out.weight"), K::kCompute);
  EXPECT_EQ(kind("single_transformer_blocks.0.proj_out.weight"), K::kFp8);
  EXPECT_EQ(kind("single_transformer_blocks.0.linear1.weight"), K::kFp8);
  EXPECT_EQ(kind("transformer_blocks.0.attn.qkv.weight"), K::kFp8);
  EXPECT_EQ(kind("x_embedder.weight"), K::kFp8);
  EXPECT_EQ(kind("time_text_embed.guidance_embedder.linear_1.weight"), K::kFp8);
}

TEST(FluxWeightLayout, SwapsDenseHalvesInPlaceAndSplitsIntoViews) {
  const FluxConfig c = tiny();
  WeightStore store(torch::kFloat32);
  const torch::Tensor mod = torch::arange(2 * 32 * 3, torch::kFloat32).reshape({64, 3});
  store.add("norm_out.linear_shift_scale.weight", mod.clone());
  store.add("transformer_blocks.0.attn.qkv.weight", torch::randn({96, 32}));
  const int64_t bytes = store.nbytes();
  const void* qkv_data = store.dense("transformer_blocks.0.attn.qkv.weight")->data_ptr();
  ASSERT_THAT(to_diffusers_layout(c, &store), IsOk());
  EXPECT_EQ(store.nbytes(), bytes);
  EXPECT_FALSE(store.contains("norm_out.linear_shift_scale.weight"));
  const torch::Tensor* swapped = store.dense("norm_out.linear.weight");
  ASSERT_NE(swapped, nullptr);
  EXPECT_TRUE(swapped->narrow(0, 0, 32).equal(mod.narrow(0, 32, 32)));
  EXPECT_TRUE(swapped->narrow(0, 32, 32).equal(mod.narrow(0, 0, 32)));
  ASSERT_NE(store.dense("transformer_blocks.0.attn.to_q.weight"), nullptr);
  EXPECT_EQ(store.dense("transformer_blocks.0.attn.to_q.weight")->data_ptr(), qkv_data);
  EXPECT_EQ(store.dense("transformer_blocks.0.attn.to_k.weight")->size(0), 32);
}

TEST(FluxWeightLayout, SwapsFp8CodesAndKeepsTheScale) {
  WeightStore store(torch::kFloat32);
  const torch::Tensor codes = torch::arange(200, torch::kUInt8).reshape({200, 1}).expand({200, 5}).contiguous();
  store.add("norm_out.linear_shift_scale.weight", Fp8Weight{codes.clone(), 0.25f, Fp8Format::kE4M3Fn});
  ASSERT_THAT(swap_row_halves(&store, "norm_out.linear_shift_scale.weight", "norm_out.linear.weight"), IsOk());
  const Fp8Weight* w = store.fp8("norm_out.linear.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->scale, 0.25f);
  EXPECT_EQ(store.nbytes(), 1000);
  EXPECT_TRUE(w->codes.narrow(0, 0, 100).equal(codes.narrow(0, 100, 100)));
  EXPECT_TRUE(w->codes.narrow(0, 100, 100).equal(codes.narrow(0, 0, 100)));
}

TEST(FluxWeightLayout, RejectsWhatDoesNotFit) {
  WeightStore store(torch::kFloat32);
  store.add("odd", torch::zeros({3, 2}));
  EXPECT_THAT(swap_row_halves(&store, "odd", "even"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'odd' with shape [3, 2] has no two")));
  EXPECT_THAT(swap_row_halves(&store, "absent", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no parameter 'absent'")));
  store.add("transformer_blocks.0.attn.qkv.weight", torch::zeros({90, 32}));
  EXPECT_THAT(to_diffusers_layout(tiny(), &store),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 90 rows, but the split asks for 96")));
}

}  // namespace
}  // namespace diffusiond
