// FluxModel's contract on a small random model: create() refuses a store
// that does not match the config, Step names every wrong input, a model
// without guidance_embeds takes no guidance, and a batch equals its items.
#include "core/models/flux/flux_model.h"

#include "core/models/flux/flux_latents.h"
#include "core/models/flux/flux_params.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

FluxConfig small(bool guidance) {
  FluxConfig c;
  c.num_attention_heads = 2;
  c.attention_head_dim = 8;
  c.axes_dims_rope = {2, 2, 4};
  c.num_layers = 1;
  c.num_single_layers = 1;
  c.joint_attention_dim = 12;
  c.pooled_projection_dim = 6;
  c.in_channels = c.out_channels = 8;
  c.guidance_embeds = guidance;
  return c;
}

std::unique_ptr<WeightStore> random_weights(const FluxConfig& c) {
  torch::manual_seed(7);
  auto store = std::make_unique<WeightStore>(torch::kFloat32);
  for (const ParamSpec& p : flux_parameter_table(c)) store->add(p.name, torch::randn(p.shape) * 0.2);
  return store;
}

std::unique_ptr<FluxModel> make(bool guidance) {
  absl::StatusOr<std::unique_ptr<FluxModel>> m = FluxModel::create(small(guidance), random_weights(small(guidance)));
  EXPECT_THAT(m, IsOk());
  return m.ok() ? std::move(*m) : nullptr;
}

// Inputs for `batch` items of a 4 x 6 latent and 5 text tokens.
NamedTensors named_inputs(const FluxConfig& c, int64_t batch) {
  NamedTensors in = {{"hidden_states", torch::randn({batch, 6, c.in_channels})},
                     {"encoder_hidden_states", torch::randn({batch, 5, c.joint_attention_dim})},
                     {"pooled_projections", torch::randn({batch, c.pooled_projection_dim})},
                     {"timestep", torch::rand({batch})},
                     {"img_ids", *latent_image_ids(4, 6)},
                     {"txt_ids", torch::zeros({5, 3})}};
  if (c.guidance_embeds) in["guidance"] = torch::full({batch}, 3.5);
  return in;
}

TEST(FluxModel, CreateNamesTheMismatch) {
  const FluxConfig c = small(true);
  auto missing = random_weights(c);
  auto lacking = std::make_unique<WeightStore>(torch::kFloat32);
  for (const std::string& name : missing->names()) {
    if (name != "proj_out.bias") lacking->add(name, *missing->dense(name));
  }
  EXPECT_THAT(FluxModel::create(c, std::move(lacking)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("lacks parameter 'proj_out.bias'")));
  auto extra = random_weights(c);
  extra->add("transformer_blocks.0.attn.qkv.weight", torch::zeros({48, 16}));
  EXPECT_THAT(FluxModel::create(c, std::move(extra)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("unexpected tensor 'transformer_blocks.0.attn.qkv.weight'")));
  FluxConfig wider = c;
  wider.joint_attention_dim = 13;
  EXPECT_THAT(FluxModel::create(wider, random_weights(c)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("'context_embedder.weight' has shape [16, 12], but the config expects [16, 13]")));
}

TEST(FluxModel, StepListsEveryMissingOrUnexpectedInput) {
  std::unique_ptr<FluxModel> model = make(true);
  ASSERT_NE(model, nullptr);
  NamedTensors in = named_inputs(model->config(), 1);
  in.erase("guidance");
  in.erase("txt_ids");
  in["cap_feats"] = torch::zeros({1});
  EXPECT_THAT(model->step(in), StatusIs(absl::StatusCode::kInvalidArgument,
                                        AllOf(HasSubstr("missing input \"txt_ids\""),
                                              HasSubstr("missing input \"guidance\""),
                                              HasSubstr("unexpected input \"cap_feats\""))));
}

TEST(FluxModel, StepNamesMisshapenInputs) {
  std::unique_ptr<FluxModel> model = make(true);
  ASSERT_NE(model, nullptr);
  NamedTensors in = named_inputs(model->config(), 2);
  in["hidden_states"] = torch::zeros({2, 6, 7});
  EXPECT_THAT(model->step(in), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("\"hidden_states\" is [2, 6, 7], expected a float [B, S, 8]")));
  in = named_inputs(model->config(), 2);
  in["img_ids"] = torch::zeros({5, 3});
  in["txt_ids"] = torch::zeros({4, 3});
  in["pooled_projections"] = torch::zeros({1, 6});
  in["guidance"] = torch::zeros({2}, torch::kInt64);
  EXPECT_THAT(model->step(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"img_ids\" is [5, 3], expected a real [6, 3]"),
                             HasSubstr("\"txt_ids\" is [4, 3], expected a real [L, 3]"),
                             HasSubstr("\"pooled_projections\" is [1, 6], expected a float [2, 6]"),
                             HasSubstr("\"guidance\" is a wrongly typed [2], expected a float [2]"))));
}

TEST(FluxModel, WithoutGuidanceEmbedsTakesNoGuidance) {
  std::unique_ptr<FluxModel> model = make(false);
  ASSERT_NE(model, nullptr);
  NamedTensors in = named_inputs(model->config(), 1);
  absl::StatusOr<NamedTensors> out = model->step(in);
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->at("out").sizes(), torch::IntArrayRef({1, 6, 8}));
  in["guidance"] = torch::ones({1});
  EXPECT_THAT(model->step(in), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("unexpected input \"guidance\": the model has no guidance")));
}

TEST(FluxModel, BatchEqualsItsItems) {
  std::unique_ptr<FluxModel> model = make(true);
  ASSERT_NE(model, nullptr);
  const NamedTensors in = named_inputs(model->config(), 2);
  absl::StatusOr<NamedTensors> both = model->step(in);
  ASSERT_THAT(both, IsOk());
  for (int64_t i = 0; i < 2; ++i) {
    NamedTensors one = in;
    for (const char* name : {"hidden_states", "encoder_hidden_states", "pooled_projections", "timestep", "guidance"}) {
      one[name] = in.at(name).narrow(0, i, 1);
    }
    absl::StatusOr<NamedTensors> single = model->step(one);
    ASSERT_THAT(single, IsOk());
    EXPECT_LT((single->at("out")[0] - both->at("out")[i]).abs().max().item<double>(), 1e-5);
  }
}

}  // namespace
}  // namespace diffusiond
