// ZImageModel::step (named inputs) and flow_predictor: the same numbers as
// forward(), and input errors that name the input at fault.
#include <torch/types.h>
#include <torch/utils.h>

#include <string>
#include <vector>

#include "core/models/model_loader.h"
#include "core/models/z_image/z_image_model.h"
#include "tools/random_models/z_image_random.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/tiny_z_image.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;


class ZImageStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(), dir_.path("model"), 3), IsOk());
    loaded_ = load_test_model(dir_.path("model"), ModelLoadOptions{});
    ASSERT_NE(loaded_.model, nullptr);
  }
  const ZImageModel& model() const { return *loaded_.model; }

  static torch::Tensor latents(int64_t batch) {
    torch::manual_seed(11);
    return torch::randn({batch, 16, 1, 4, 4});
  }
  static torch::Tensor captions(std::vector<int64_t> shape) {
    torch::manual_seed(12);
    return torch::randn(shape);
  }

  TempDir dir_;
  LoadedModel loaded_;
};

TEST_F(ZImageStepTest, StackedCaptionsGiveForwardsOutput) {
  const torch::Tensor x = latents(2);
  const torch::Tensor t = torch::tensor({0.25f, 0.75f});
  const torch::Tensor caps = captions({2, 5, 32});
  absl::StatusOr<NamedTensors> out = model().step({{"x", x}, {"t", t}, {"cap_feats", caps}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ(out->count("out"), 1u);
  const torch::Tensor& y = out->at("out");
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 16, 1, 4, 4}));

  absl::StatusOr<std::vector<torch::Tensor>> expected = model().forward({x[0], x[1]}, t, {caps[0], caps[1]});
  ASSERT_THAT(expected, IsOk());
  EXPECT_TRUE(torch::equal(y, torch::stack(*expected)));
  // The two items differ: the output is not one item broadcast.
  EXPECT_FALSE(torch::equal(y[0], y[1]));
}

TEST_F(ZImageStepTest, PerItemCaptionsMayDifferInLength) {
  const torch::Tensor x = latents(2);
  const torch::Tensor t = torch::tensor({0.5f, 0.5f});
  const torch::Tensor cap0 = captions({3, 32});
  const torch::Tensor cap1 = captions({7, 32}) * 2;
  absl::StatusOr<NamedTensors> out =
      model().step({{"x", x}, {"t", t}, {"cap_feats_0", cap0}, {"cap_feats_1", cap1}});
  ASSERT_THAT(out, IsOk());
  absl::StatusOr<std::vector<torch::Tensor>> expected = model().forward({x[0], x[1]}, t, {cap0, cap1});
  ASSERT_THAT(expected, IsOk());
  EXPECT_TRUE(torch::equal(out->at("out"), torch::stack(*expected)));
}

TEST_F(ZImageStepTest, MissingInputsAreNamed) {
  const torch::Tensor x = latents(2);
  const torch::Tensor t = torch::tensor({0.5f, 0.5f});
  const torch::Tensor caps = captions({2, 5, 32});
  EXPECT_THAT(model().step({{"t", t}, {"cap_feats", caps}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"x\"")));
  EXPECT_THAT(model().step({{"x", x}, {"cap_feats", caps}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"t\"")));
  EXPECT_THAT(model().step({{"x", x}, {"t", t}, {"cap_feats_0", caps[0]}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing input \"cap_feats_1\"")));
}

TEST_F(ZImageStepTest, UnexpectedInputsAreNamed) {
  const torch::Tensor x = latents(1);
  const torch::Tensor t = torch::tensor({0.5f});
  const torch::Tensor caps = captions({1, 5, 32});
  EXPECT_THAT(model().step({{"x", x}, {"t", t}, {"cap_feats", caps}, {"mask", caps}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input \"mask\"")));
  // Stacked captions exclude per-item ones.
  EXPECT_THAT(model().step({{"x", x}, {"t", t}, {"cap_feats", caps}, {"cap_feats_0", caps[0]}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input \"cap_feats_0\"")));
  // Items beyond the batch are not silently ignored.
  EXPECT_THAT(model().step({{"x", x}, {"t", t}, {"cap_feats_0", caps[0]}, {"cap_feats_1", caps[0]}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input \"cap_feats_1\"")));
}

TEST_F(ZImageStepTest, MisshapenInputsAreNamedWithWhatWasExpected) {
  const torch::Tensor x = latents(2);
  const torch::Tensor t = torch::tensor({0.5f, 0.5f});
  EXPECT_THAT(model().step({{"x", x}, {"t", t}, {"cap_feats", captions({2, 5, 31})}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"cap_feats\""), HasSubstr("[L, 32]"), HasSubstr("[5, 31]"))));
  EXPECT_THAT(model().step({{"x", x}, {"t", t}, {"cap_feats_0", captions({5, 32})},
                            {"cap_feats_1", captions({5, 16})}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"cap_feats_1\""), HasSubstr("[L, 32]"), HasSubstr("[5, 16]"))));
  EXPECT_THAT(model().step({{"x", x}, {"t", t}, {"cap_feats", captions({3, 5, 32})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"cap_feats\" must be [2, L, D]")));
  EXPECT_THAT(model().step({{"x", x[0]}, {"t", t}, {"cap_feats", captions({2, 5, 32})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"x\" must be [B, C, F, H, W]")));
  EXPECT_THAT(model().step({{"x", x}, {"t", torch::tensor({0.5f, 0.5f, 0.5f})},
                            {"cap_feats", captions({2, 5, 32})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"t\" must be [2]")));
  EXPECT_THAT(model().step({{"x", x.to(torch::kInt32)}, {"t", t}, {"cap_feats", captions({2, 5, 32})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("floating-point")));
}

Conditioning caption_conditioning(const torch::Tensor& cap) {
  Conditioning c;
  c.tensors["cap_feats"] = cap;
  return c;
}

TEST_F(ZImageStepTest, FlowPredictorRunsTheModelOnOneItem) {
  const torch::Tensor cap = captions({5, 32});
  absl::StatusOr<FlowPredictor> predict = model().flow_predictor(caption_conditioning(cap), nullptr);
  ASSERT_THAT(predict, IsOk());
  const torch::Tensor lat = latents(1)[0].squeeze(1);  // [C, H, W]
  absl::StatusOr<FlowPrediction> p = (*predict)(lat, 0.5f, /*with_negative=*/false);
  ASSERT_THAT(p, IsOk());
  absl::StatusOr<std::vector<torch::Tensor>> expected =
      model().forward({lat.unsqueeze(1)}, torch::tensor({0.5f}), {cap});
  ASSERT_THAT(expected, IsOk());
  EXPECT_EQ(p->positive.sizes().vec(), (std::vector<int64_t>{16, 4, 4}));
  EXPECT_TRUE(torch::equal(p->positive, (*expected)[0].squeeze(1)));
  EXPECT_FALSE(p->negative.defined());
}

TEST_F(ZImageStepTest, FlowPredictorNamesEveryConditioningProblem) {
  const auto predictor = [&](const torch::Tensor& cap) { return model().flow_predictor(caption_conditioning(cap), nullptr); };
  EXPECT_THAT(predictor(captions({5, 31})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"cap_feats\" is a float [5, 31], expected a float [L, 32]"))));
  EXPECT_THAT(predictor(captions({1, 5, 32})), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[1, 5, 32]")));
  EXPECT_THAT(predictor(captions({0, 32})), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[0, 32]")));
  EXPECT_THAT(predictor(captions({5, 32}).to(torch::kInt64)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a non-float [5, 32]")));
  Conditioning two_problems;
  two_problems.tensors["caption"] = captions({5, 32});
  two_problems.scalars["guidance"] = 3.5;
  EXPECT_THAT(model().flow_predictor(two_problems, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("missing tensor \"cap_feats\""), HasSubstr("unexpected tensor \"caption\""),
                             HasSubstr("unexpected scalar \"guidance\""))));
  const Conditioning good = caption_conditioning(captions({5, 32})), bad = caption_conditioning(captions({5, 8}));
  EXPECT_THAT(model().flow_predictor(good, &bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative conditioning")));
  const Conditioning other_length = caption_conditioning(captions({2, 32}));
  EXPECT_THAT(model().flow_predictor(good, &other_length), IsOk());
}

// A request with 10,000 names the model does not take: the first few and a
// count, well under gRPC's 8 KiB of trailing metadata (it was 269 kB, and
// the client saw RESOURCE_EXHAUSTED from its own transport).
TEST_F(ZImageStepTest, ManyUnexpectedNamesMakeAShortMessage) {
  Conditioning many = caption_conditioning(captions({5, 32}));
  for (int i = 0; i < 10000; ++i) many.scalars[absl::StrCat("s", i, std::string(300, 'x'))] = 1.0;
  const absl::Status s = model().flow_predictor(many, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("and 9996 more"));
  EXPECT_LT(s.message().size(), 1024u) << s.message();
}

}  // namespace
}  // namespace diffusiond
