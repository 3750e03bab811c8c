// What each model's own precision declaration keeps from FP8 beyond the
// default skip patterns, on the real configs in docs/configs (the figures
// docs/models.md quotes, as `diffusiond-checkpoint plan-config` prints
// them), and the rule itself on a made-up plan.
#include "core/loader/declared_exclusions.h"

#include <map>
#include <string>

#include "core/models/model_family.h"
#include "core/models/model_loader.h"
#include "core/util/file_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Pair;

// The config at docs/configs/`relative`, planned as plan-config plans it
// (bf16 weights as released, FP8 e4m3fn, bfloat16 compute).
absl::StatusOr<ConfigPlan> plan_docs_config(const std::string& relative) {
  const std::string path = testing::docs_dir() + "/configs/" + relative;
  absl::StatusOr<std::string> json = read_text_file(path);
  if (!json.ok()) return json.status();
  const ModelFamily* family = find_family_for_config(*json);
  if (family == nullptr) return absl::NotFoundError(path + ": no family");
  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = family->recipe_for_config(*json, path);
  if (!recipe.ok()) return recipe.status();
  ModelLoadOptions options;
  options.compute_dtype = torch::kBFloat16;
  options.fp8.format = Fp8Format::kE4M3Fn;
  return plan_model_config(*std::move(recipe), options, path);
}

DeclaredExclusions exclusions_of(const std::string& relative) {
  absl::StatusOr<ConfigPlan> planned = plan_docs_config(relative);
  EXPECT_THAT(planned, IsOk());
  if (!planned.ok()) return {};
  absl::StatusOr<DeclaredExclusions> e = declared_exclusions(planned->plan, planned->options);
  EXPECT_THAT(e, IsOk());
  return e.ok() ? *e : DeclaredExclusions{};
}

// Wan declares "condition_embedder" (and "patch_embedding", which the
// default "patch_embed" already matches): the text and time embedders and
// the 6-way time projection, 232.0 M parameters, 221 MiB as FP8 codes.
TEST(DeclaredExclusions, Wan21T2v14bKeepsItsConditionEmbedder) {
  const DeclaredExclusions e = exclusions_of("wan2.1-t2v-14b-transformer.json");
  EXPECT_EQ(e.tensors, 5);
  EXPECT_EQ(e.parameters, 231'997'440);
  EXPECT_THAT(e.parameters_by_module, ElementsAre(Pair("condition_embedder", 231'997'440)));
  // The time embedder is also kept in float32 (`_keep_in_fp32_modules`): 3
  // bytes over its codes, the rest 1 at bfloat16.
  EXPECT_EQ(e.bytes_over_fp8, 3 * 27'525'120 + (231'997'440 - 27'525'120));
}

// Krea 2 declares "time_embed": its two-layer MLP, 39.3 M parameters.
TEST(DeclaredExclusions, Krea2KeepsItsTimeEmbedding) {
  const DeclaredExclusions e = exclusions_of("krea2-transformer.json");
  EXPECT_EQ(e.tensors, 2);
  EXPECT_EQ(e.parameters, 39'321'600);
  EXPECT_THAT(e.parameters_by_module, ElementsAre(Pair("time_embed", 39'321'600)));
}

// Cosmos as Anima configures it declares upstream's ["patch_embed",
// "final_layer", "norm"] and the seed's "t_embedder": on diffusers' names
// only the time embedder's MLP is beyond the defaults (16.8 M; the
// original names' x_embedder and final_layer are patch_embed, norm_out and
// proj_out here, default patterns already).
TEST(DeclaredExclusions, AnimaKeepsItsTimeEmbedder) {
  const DeclaredExclusions e = exclusions_of("anima-transformer.json");
  EXPECT_EQ(e.tensors, 2);
  EXPECT_EQ(e.parameters, 16'777'216);
  EXPECT_THAT(e.parameters_by_module, ElementsAre(Pair("time_embed", 16'777'216)));
  // The text conditioner declares nothing.
  EXPECT_EQ(exclusions_of("anima-text-conditioner.json").tensors, 0);
}

// FLUX.1 and Qwen-Image declare ["pos_embed", "norm"], both defaults.
TEST(DeclaredExclusions, FluxAndQwenImageAddNothingToTheDefaults) {
  for (const char* config :
       {"flux1-dev-transformer.json", "flux1-schnell-transformer.json", "qwen-image-transformer.json"}) {
    SCOPED_TRACE(config);
    const DeclaredExclusions e = exclusions_of(config);
    EXPECT_EQ(e.tensors, 0);
    EXPECT_EQ(e.parameters, 0);
  }
}

// The Qwen text towers declare their token table (an Embedding of rank 2,
// which no default holds): Qwen2.5-VL-7B's 152064 x 3584 (Qwen-Image's
// text encoder) and Qwen3-VL-4B's 151936 x 2560 (Krea 2's); biases are never
// FP8 anyway. The configs are reconstructed (docs/models.md says so).
TEST(DeclaredExclusions, TheQwenVlTowersKeepTheirTokenTables) {
  DeclaredExclusions e = exclusions_of("qwen-image-text-encoder.json");
  EXPECT_EQ(e.tensors, 1);
  EXPECT_EQ(e.parameters, 152'064LL * 3584);
  EXPECT_THAT(e.parameters_by_module, ElementsAre(Pair("embed_tokens", 152'064LL * 3584)));
  e = exclusions_of("krea2-text-encoder.json");
  EXPECT_EQ(e.tensors, 1);
  EXPECT_EQ(e.parameters, 151'936LL * 2560);
  EXPECT_THAT(e.parameters_by_module, ElementsAre(Pair("embed_tokens", 151'936LL * 2560)));
}

// The rule on a made-up model: a declared pattern that the defaults do not
// hold counts its layer weights only (never biases), a declared pattern the
// defaults hold counts nothing, and a plan without FP8 has no answer.
TEST(DeclaredExclusions, CountsOnlyLayerWeightsTheDefaultsWouldCast) {
  std::vector<TensorRecord> records;
  auto add = [&records](const std::string& name, std::vector<int64_t> shape) {
    TensorRecord r;
    r.name = name;
    r.dtype = DType::kBF16;
    r.shape = shape;
    r.numel = 1;
    for (int64_t d : shape) r.numel *= d;
    r.nbytes = 2 * r.numel;
    records.push_back(r);
  };
  add("embedder.linear.weight", {8, 4});
  add("embedder.linear.bias", {8});
  add("blocks.0.norm.linear.weight", {16, 8});
  add("blocks.0.ff.weight", {8, 8});
  PlanOptions options;
  options.compute_dtype = torch::kBFloat16;
  options.fp8.format = Fp8Format::kE4M3Fn;
  options.declaration.skip_patterns = {"embedder", "norm"};
  absl::StatusOr<LoadPlan> plan = plan_tensors(
      records, [](absl::string_view) { return nullptr; }, "m", options);
  ASSERT_THAT(plan, IsOk());
  absl::StatusOr<DeclaredExclusions> e = declared_exclusions(*plan, options);
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->tensors, 1);
  EXPECT_EQ(e->parameters, 32);
  EXPECT_EQ(e->bytes_over_fp8, 32);
  EXPECT_THAT(e->parameters_by_module, ElementsAre(Pair("embedder", 32)));

  options.fp8.format.reset();
  plan = plan_tensors(
      records, [](absl::string_view) { return nullptr; }, "m", options);
  ASSERT_THAT(plan, IsOk());
  EXPECT_THAT(declared_exclusions(*plan, options),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::HasSubstr("FP8 storage on")));
}

}  // namespace
}  // namespace diffusiond
