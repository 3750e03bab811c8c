#include "core/precision/precision_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;
using Kind = StorageDecision::Kind;

PrecisionPolicy make(const PrecisionDeclaration& declared, bool fp8 = true) {
  Fp8Options options;
  if (fp8) options.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<PrecisionPolicy> p = PrecisionPolicy::create(options, declared);
  EXPECT_THAT(p, IsOk());
  return *p;
}

TEST(PrecisionPolicy, LayerWeightsGetFp8) {
  const PrecisionPolicy p = make({});
  EXPECT_EQ(p.decide("layers.0.attention.to_q.weight", ParamKind::kLayerWeight).kind, Kind::kFp8);
}

TEST(PrecisionPolicy, DefaultSkipPatternsApply) {
  const PrecisionPolicy p = make({});
  for (const char* name : {"pos_embed.proj.weight", "x.patch_embed.weight",
                           "layers.0.attention_norm1.weight", "proj_in.weight", "proj_out.weight"}) {
    const StorageDecision d = p.decide(name, ParamKind::kLayerWeight);
    EXPECT_EQ(d.kind, Kind::kCompute) << name;
    EXPECT_THAT(d.reason, HasSubstr("default skip pattern")) << name;
  }
  // Anchored patterns match only the whole module path.
  EXPECT_EQ(p.decide("blocks.proj_out.weight", ParamKind::kLayerWeight).kind, Kind::kFp8);
}

TEST(PrecisionPolicy, ModelSkipPatternsAndKeepInFp32AreUnioned) {
  PrecisionDeclaration declared;
  declared.skip_patterns = {"t_embedder", "cap_embedder"};
  declared.keep_in_fp32_modules = {"^time_proj$", "final_layer"};
  const PrecisionPolicy p = make(declared);
  EXPECT_EQ(p.decide("t_embedder.mlp.0.weight", ParamKind::kLayerWeight).kind, Kind::kCompute);
  EXPECT_EQ(p.decide("cap_embedder.1.weight", ParamKind::kLayerWeight).kind, Kind::kCompute);
  const StorageDecision keep = p.decide("final_layer.linear.weight", ParamKind::kLayerWeight);
  EXPECT_EQ(keep.kind, Kind::kFloat32);
  EXPECT_THAT(keep.reason, HasSubstr("keep-in-fp32 module 'final_layer'"));
  EXPECT_EQ(p.decide("time_proj.weight", ParamKind::kLayerWeight).kind, Kind::kFloat32);
  EXPECT_EQ(p.decide("final_layer.linear.bias", ParamKind::kBias).kind, Kind::kFloat32);
  EXPECT_EQ(p.decide("layers.0.feed_forward.w1.weight", ParamKind::kLayerWeight).kind, Kind::kFp8);
}

TEST(PrecisionPolicy, KeepInFp32HoldsEvenWithFp8Off) {
  PrecisionDeclaration declared;
  declared.keep_in_fp32_modules = {"scale_shift"};
  const PrecisionPolicy p = make(declared, /*fp8=*/false);
  EXPECT_EQ(p.decide("scale_shift.weight", ParamKind::kLayerWeight).kind, Kind::kFloat32);
  EXPECT_EQ(p.decide("layers.0.w1.weight", ParamKind::kLayerWeight).kind, Kind::kCompute);
}

TEST(PrecisionPolicy, BiasesNormsAndBareParametersNeverGetFp8) {
  const PrecisionPolicy p = make({});
  EXPECT_EQ(p.decide("layers.0.w1.bias", ParamKind::kBias).kind, Kind::kCompute);
  EXPECT_EQ(p.decide("layers.0.q_norm.weight", ParamKind::kNormWeight).kind, Kind::kCompute);
  EXPECT_EQ(p.decide("x_pad_token", ParamKind::kBare).kind, Kind::kCompute);
}

TEST(PrecisionPolicy, BadRegexIsNamed) {
  PrecisionDeclaration declared;
  declared.skip_patterns = {"("};
  EXPECT_THAT(PrecisionPolicy::create({}, declared),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model skip pattern '('")));
}

TEST(ClassifyByRule, FollowsTheDocumentedRule) {
  EXPECT_EQ(classify_by_rule("a.weight", {4, 4}), ParamKind::kLayerWeight);
  EXPECT_EQ(classify_by_rule("conv.weight", {8, 4, 3, 3}), ParamKind::kLayerWeight);
  EXPECT_EQ(classify_by_rule("norm.weight", {4}), ParamKind::kNormWeight);
  EXPECT_EQ(classify_by_rule("a.bias", {4}), ParamKind::kBias);
  EXPECT_EQ(classify_by_rule("x_pad_token", {1, 4}), ParamKind::kBare);
}

TEST(ModulePath, DropsTheLastComponent) {
  EXPECT_EQ(module_path("layers.0.attention.to_q.weight"), "layers.0.attention.to_q");
  EXPECT_EQ(module_path("x_pad_token"), "");
}

}  // namespace
}  // namespace diffusiond
