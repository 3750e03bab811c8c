// Activation admission through a real Engine over tiny random Z-Image
// models: a Denoise or Step whose estimate does not fit is refused naming
// the estimate, one that fits after evicting an unpinned model evicts it,
// and the reservation is held for the call and released after it, on
// success and on failure.
#include "core/engine/step_admission.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/util/bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/tiny_z_image.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class StepAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(), models_dir_ + "/a", 1), IsOk());
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(), models_dir_ + "/b", 2), IsOk());
  }

  // (Re)creates the engine under a RAM budget of `capacity` bytes.
  void start(int64_t capacity) {
    EngineOptions o;
    o.models_dir = models_dir_;
    ASSERT_THAT(::diffusiond::testing::start_engine(o, capacity, &ram_, &engine_), IsOk());
  }

  int64_t load(const std::string& id) {
    ModelLoadRequest r;
    r.path = id;
    absl::StatusOr<ModelInfo> info = engine_->load(r);
    EXPECT_THAT(info, IsOk());
    return info.ok() ? info->bytes[kCpuIndex] : 0;
  }

  // A guided Denoise of a 32 x 32 latent: its estimate is several MiB,
  // far above the model's weights.
  static EngineDenoiseRequest denoise_request(const std::string& id) {
    EngineDenoiseRequest r;
    r.model = ModelHandle::by_id(id);
    r.latent_shape = {16, 32, 32};
    r.seed = 5;
    r.steps = 1;
    r.shift = 0;
    r.guidance_scale = 2.0;
    torch::manual_seed(2);
    r.positive.tensors["cap_feats"] = torch::randn({5, 32});
    Conditioning negative;
    negative.tensors["cap_feats"] = torch::randn({3, 32});
    r.negative = negative;
    return r;
  }

  static NamedTensors step_inputs() {
    torch::manual_seed(3);
    return {{"x", torch::randn({2, 16, 1, 32, 32})},
            {"t", torch::full({2}, 0.5)},
            {"cap_feats", torch::randn({2, 7, 32})}};
  }

  // Runs the Denoise; returns the budget's reserved bytes seen during its
  // steps (the activations' reservation).
  absl::StatusOr<int64_t> denoise_reserving(const EngineDenoiseRequest& r) {
    int64_t reserved = -1;
    DenoiseOptions options;
    options.on_step = [&](const StepEvent&) { reserved = ram_->snapshot().reserved_bytes; };
    absl::StatusOr<torch::Tensor> out = engine_->denoise(r, options);
    if (!out.ok()) return out.status();
    return reserved;
  }

  std::vector<std::string> loaded() const {
    std::vector<std::string> ids;
    for (const ModelInfo& m : engine_->list()) ids.push_back(m.model_id);
    return ids;
  }

  // Teardown order: the engine (and its cache) before the budget.
  testing::TempDir dir_;
  std::string models_dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(StepAdmissionTest, TheReservationIsHeldForTheCallAndReleasedAfter) {
  start(int64_t{1} << 30);
  load("a");
  const BudgetSnapshot before = ram_->snapshot();
  absl::StatusOr<int64_t> reserved = denoise_reserving(denoise_request("a"));
  ASSERT_THAT(reserved, IsOk());
  EXPECT_GT(*reserved, int64_t{1} << 20);
  const BudgetSnapshot after = ram_->snapshot();
  EXPECT_EQ(after.reserved_bytes, 0);
  EXPECT_EQ(after.available_bytes(), before.available_bytes());
  EXPECT_GE(after.high_water_bytes, before.committed_bytes + *reserved);

  ASSERT_THAT(engine_->step("a", step_inputs()), IsOk());
  EXPECT_EQ(ram_->snapshot().reserved_bytes, 0);
  EXPECT_EQ(ram_->available_bytes(), before.available_bytes());
}

TEST_F(StepAdmissionTest, AFailedCallReleasesItsReservationToo) {
  start(int64_t{1} << 30);
  load("a");
  const int64_t available = ram_->available_bytes();
  CancellationSource cancel;
  DenoiseOptions options;
  options.cancel = cancel.token();
  options.on_step = [&](const StepEvent&) { cancel.cancel(absl::CancelledError("client gone")); };
  EngineDenoiseRequest r = denoise_request("a");
  r.steps = 3;
  EXPECT_THAT(engine_->denoise(r, options), StatusIs(absl::StatusCode::kCancelled, HasSubstr("client gone")));
  EXPECT_EQ(ram_->available_bytes(), available);
  // A Step the model refuses (a caption of the wrong width) after admission.
  NamedTensors bad = step_inputs();
  bad["cap_feats"] = torch::randn({2, 7, 31});
  EXPECT_THAT(engine_->step("a", bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cap_feats")));
  EXPECT_EQ(ram_->available_bytes(), available);
}

TEST_F(StepAdmissionTest, ADenoiseWhoseEstimateDoesNotFitIsRefusedNamingIt) {
  start(int64_t{1} << 30);
  const int64_t a = load("a");
  absl::StatusOr<int64_t> estimate = denoise_reserving(denoise_request("a"));
  ASSERT_THAT(estimate, IsOk());

  start(a + *estimate - 1);
  load("a");
  EXPECT_THAT(engine_->denoise(denoise_request("a"), {}),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("no room for the activations of model \"a\""),
                             HasSubstr(absl::StrCat("estimate ", format_bytes(*estimate))),
                             HasSubstr("z-image at float32, batch 2 x 288 tokens"), HasSubstr("block peak"),
                             HasSubstr("needed"))));
  EXPECT_THAT(loaded(), ElementsAre("a"));
  EXPECT_EQ(ram_->snapshot().reserved_bytes, 0);
}

TEST_F(StepAdmissionTest, AStepWhoseEstimateDoesNotFitIsRefusedNamingIt) {
  start(int64_t{1} << 30);
  const int64_t a = load("a");
  start(a + (int64_t{1} << 20));
  load("a");
  EXPECT_THAT(engine_->step("a", step_inputs()),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("activations of model \"a\": estimate"), HasSubstr("batch 2 x 288 tokens"))));
  EXPECT_EQ(ram_->snapshot().reserved_bytes, 0);
}

TEST_F(StepAdmissionTest, ADenoiseThatFitsAfterEvictingAnUnpinnedModelEvictsIt) {
  start(int64_t{1} << 30);
  const int64_t a = load("a"), b = load("b");
  absl::StatusOr<int64_t> estimate = denoise_reserving(denoise_request("a"));
  ASSERT_THAT(estimate, IsOk());

  // Room for a's activations beside a, but not beside both models.
  start(a + b + *estimate - 1);
  load("a");
  load("b");
  ASSERT_THAT(loaded(), ElementsAre("b", "a"));
  EXPECT_THAT(denoise_reserving(denoise_request("a")), IsOk());
  EXPECT_THAT(loaded(), ElementsAre("a"));
  EXPECT_EQ(ram_->snapshot().reserved_bytes, 0);
}

TEST_F(StepAdmissionTest, ALeasedModelIsNotEvictedForActivations) {
  start(int64_t{1} << 30);
  const int64_t a = load("a"), b = load("b");
  absl::StatusOr<int64_t> estimate = denoise_reserving(denoise_request("a"));
  ASSERT_THAT(estimate, IsOk());

  start(a + b + *estimate - 1);
  load("a");
  load("b");
  ASSERT_THAT(engine_->acquire_lease("b", absl::Hours(1)), IsOk());
  EXPECT_THAT(engine_->denoise(denoise_request("a"), {}),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("estimate")));
  EXPECT_THAT(loaded(), UnorderedElementsAre("a", "b"));
}

}  // namespace
}  // namespace diffusiond
