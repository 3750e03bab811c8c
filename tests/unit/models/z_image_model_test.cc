// Z-Image config parsing, single-file key map and input validation.
#include "core/models/z_image/z_image_config.h"
#include "core/models/z_image/z_image_params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ZImageConfig, DefaultsAreTheRealModel) {
  absl::StatusOr<ZImageConfig> c = parse_z_image_config(R"({"_class_name": "ZImageTransformer2DModel"})", "c");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->dim, 3840);
  EXPECT_EQ(c->head_dim(), 128);
  EXPECT_EQ(c->ffn_hidden(), 10240);
}

TEST(ZImageConfig, RejectsOtherClassesAndBadFields) {
  EXPECT_THAT(parse_z_image_config(R"({"_class_name": "FluxTransformer2DModel"})", "cfg.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cfg.json: _class_name")));
  EXPECT_THAT(parse_z_image_config(R"({"dim": "big"})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field 'dim'")));
  EXPECT_THAT(parse_z_image_config(R"({"dim": 64, "n_heads": 2, "axes_dims": [8, 8, 8]})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sum to head_dim 32")));
  EXPECT_THAT(parse_z_image_config(R"({"all_patch_size": [2, 4]})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one patch size")));
}

TEST(ZImageKeys, OriginalNamesMapToDiffusersNames) {
  EXPECT_EQ(*z_image_canonical_name("x_embedder.weight"), "all_x_embedder.2-1.weight");
  EXPECT_EQ(*z_image_canonical_name("model.diffusion_model.final_layer.linear.bias"),
            "all_final_layer.2-1.linear.bias");
  EXPECT_EQ(*z_image_canonical_name("layers.3.attention.out.weight"), "layers.3.attention.to_out.0.weight");
  EXPECT_EQ(*z_image_canonical_name("noise_refiner.0.attention.k_norm.weight"),
            "noise_refiner.0.attention.norm_k.weight");
  EXPECT_EQ(*z_image_canonical_name("layers.0.attention.to_q.weight"), "layers.0.attention.to_q.weight");
  EXPECT_FALSE(z_image_canonical_name("norm_final.weight").has_value());
}

TEST(ZImageKeys, FusedQkvSplitsIntoThreeProjections) {
  ZImageConfig c;
  c.dim = 64;
  const std::vector<FusedSplit> splits =
      z_image_fused_splits(c, {"layers.1.attention.qkv.weight", "layers.1.attention.norm_q.weight"});
  ASSERT_EQ(splits.size(), 1u);
  EXPECT_EQ(splits[0].parts[2].first, "layers.1.attention.to_v.weight");
  EXPECT_EQ(splits[0].parts[2].second, 64);
}

TEST(ZImageParams, TableCountsTheRealModel) {
  absl::StatusOr<ZImageConfig> c = parse_z_image_config("{}", "c");
  ASSERT_THAT(c, IsOk());
  int64_t params = 0;
  for (const ParamSpec& p : z_image_parameter_table(*c)) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    params += n;
  }
  // Z-Image-Turbo's transformer has about 6.15 billion parameters.
  EXPECT_GT(params, 6'000'000'000);
  EXPECT_LT(params, 6'300'000'000);
}

}  // namespace
}  // namespace diffusiond
