#include "core/loader/load_plan.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::filled_tensor;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::write_safetensors;
using ::testing::HasSubstr;
using Action = PlannedTensor::Action;

class LoadPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_safetensors(dir_.path("m.safetensors"),
                      {filled_tensor("blocks.0.ff.weight", DType::kBF16, {64, 32}),
                       filled_tensor("blocks.0.ff.bias", DType::kBF16, {64}),
                       filled_tensor("blocks.0.norm.weight", DType::kF32, {32}),
                       filled_tensor("head.weight", DType::kBF16, {8, 32}),
                       filled_tensor("pad_token", DType::kF32, {1, 32}),
                       filled_tensor("positions", DType::kI64, {7})});
    absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir_.path("m.safetensors"));
    ASSERT_THAT(c, IsOk());
    ckpt_ = std::move(*c);
  }
  const PlannedTensor& find(const LoadPlan& plan, const std::string& name) {
    for (const PlannedTensor& t : plan.tensors) {
      if (t.source->name == name) return t;
    }
    ADD_FAILURE() << "no " << name;
    return plan.tensors.front();
  }

  TempDir dir_;
  std::unique_ptr<Checkpoint> ckpt_;
};

TEST_F(LoadPlanTest, Fp8OffStoresFloatsAtComputeDtype) {
  absl::StatusOr<LoadPlan> plan = plan_load(*ckpt_, {});
  ASSERT_THAT(plan, IsOk());
  EXPECT_EQ(plan->fp8_tensors(), 0);
  EXPECT_EQ(find(*plan, "blocks.0.ff.weight").action, Action::kCast);
  EXPECT_EQ(find(*plan, "blocks.0.norm.weight").action, Action::kRead);  // F32 already
  EXPECT_EQ(find(*plan, "positions").storage_dtype, torch::kInt64);
  // bf16 -> f32 doubles: (2048 + 64 + 256) * 4 + norm 128 + pad 128 + int64 56
  EXPECT_EQ(plan->final_bytes, (2048 + 64 + 256) * 4 + 128 + 128 + 56);
  EXPECT_EQ(plan->staging_bytes, 64 * 32 * 2);  // the largest converted source
  EXPECT_EQ(plan->reservation_bytes(), plan->final_bytes + plan->staging_bytes);
}

TEST_F(LoadPlanTest, Fp8CastsLayerWeightsOnly) {
  PlanOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  options.declaration.skip_patterns = {"^head$"};
  absl::StatusOr<LoadPlan> plan = plan_load(*ckpt_, options);
  ASSERT_THAT(plan, IsOk());
  EXPECT_EQ(find(*plan, "blocks.0.ff.weight").action, Action::kFp8Encode);
  EXPECT_EQ(find(*plan, "blocks.0.ff.weight").final_bytes, 64 * 32);
  EXPECT_THAT(find(*plan, "head.weight").reason, HasSubstr("model skip pattern '^head$'"));
  EXPECT_EQ(plan->fp8_tensors(), 1);
  EXPECT_EQ(plan->bytes_by_storage().at("fp8-e4m3fn"), 64 * 32);
}

TEST_F(LoadPlanTest, StagingIsCappedAtTheChunkSize) {
  PlanOptions options;
  options.staging_chunk_bytes = 1000;
  absl::StatusOr<LoadPlan> plan = plan_load(*ckpt_, options);
  ASSERT_THAT(plan, IsOk());
  EXPECT_EQ(plan->staging_bytes, 1000);
}

TEST_F(LoadPlanTest, BfloatComputeReadsBf16Directly) {
  PlanOptions options;
  options.compute_dtype = torch::kBFloat16;
  absl::StatusOr<LoadPlan> plan = plan_load(*ckpt_, options);
  ASSERT_THAT(plan, IsOk());
  EXPECT_EQ(find(*plan, "blocks.0.ff.weight").action, Action::kRead);
  EXPECT_EQ(find(*plan, "blocks.0.norm.weight").action, Action::kCast);  // F32 -> BF16
}

TEST_F(LoadPlanTest, KeepNarrowReadsNarrowFloatsAsStoredUnderFloat32) {
  PlanOptions options;
  options.keep_narrow = true;
  options.declaration.keep_in_fp32_modules = {"^head$"};
  absl::StatusOr<LoadPlan> plan = plan_load(*ckpt_, options);
  ASSERT_THAT(plan, IsOk());
  const PlannedTensor& ff = find(*plan, "blocks.0.ff.weight");
  EXPECT_EQ(ff.action, Action::kRead);
  EXPECT_EQ(ff.storage_dtype, torch::kBFloat16);
  EXPECT_THAT(ff.reason, HasSubstr("kept bfloat16 as stored, upcast to float32 per use"));
  EXPECT_EQ(find(*plan, "blocks.0.ff.bias").storage_dtype, torch::kBFloat16);
  // A keep-in-fp32 module is widened all the same, and float32 stays float32.
  EXPECT_EQ(find(*plan, "head.weight").action, Action::kCast);
  EXPECT_EQ(find(*plan, "head.weight").storage_dtype, torch::kFloat32);
  EXPECT_EQ(find(*plan, "blocks.0.norm.weight").storage_dtype, torch::kFloat32);
  // (2048 + 64) bf16 + head 256 * 4 + norm 128 + pad 128 + int64 56
  EXPECT_EQ(plan->final_bytes, (2048 + 64) * 2 + 256 * 4 + 128 + 128 + 56);
  EXPECT_EQ(plan->staging_bytes, 8 * 32 * 2);  // only the head still converts
}

TEST_F(LoadPlanTest, KeepNarrowNeitherNarrowsNorAppliesAtEqualWidth) {
  PlanOptions options;
  options.keep_narrow = true;
  options.compute_dtype = torch::kBFloat16;
  absl::StatusOr<LoadPlan> plan = plan_load(*ckpt_, options);
  ASSERT_THAT(plan, IsOk());
  // An F32 source is cast down to the compute dtype as before: keep_narrow
  // never keeps a tensor wider than the compute dtype.
  EXPECT_EQ(find(*plan, "blocks.0.norm.weight").action, Action::kCast);
  EXPECT_EQ(find(*plan, "blocks.0.norm.weight").storage_dtype, torch::kBFloat16);
  EXPECT_EQ(find(*plan, "blocks.0.ff.weight").reason.find("as stored"), std::string::npos);
}

}  // namespace
}  // namespace diffusiond
