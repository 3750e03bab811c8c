// Every role on the simulated device: text encoders (Qwen3, CLIP, T5,
// through the TextEncoder role), Anima's text conditioner (through
// condition_text) and the VAEs (AutoencoderKL and the causal
// 3-D AutoencoderKLWan, decode and encode; the latter's feature caches
// across chunks on the device too) are placed
// by the rule denoisers follow. For each: the CPU's answer bit for bit, a
// streaming plan equal to full residency, a budget for two placements of
// three evicting the least recently used, and a refusal below the minimum
// naming needed, available and evictable bytes. Then a placement re-planned
// for a larger call and grown back for a smaller one, and a Generate whose
// three stages all run on the device.
#include <torch/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"

#include "core/engine/engine.h"
#include "core/pipeline/generate.h"
#include "core/util/bytes.h"
#include "core/vram/sim_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "core/models/model_family.h"
#include "tools/random_models/flux_pipeline_random.h"
#include "tools/random_models/pipeline_random.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// One role's call: its output as one float tensor (what is compared), and
// where it ran when the call reports it.
using RoleCall = std::function<absl::StatusOr<torch::Tensor>(Engine&, const std::string& id, CallDevice* where)>;

struct Role {
  std::string name;  // the test's suffix
  std::string path;  // in the models folder
  RoleCall call;
};

void PrintTo(const Role& role, std::ostream* os) { *os << role.name; }

// A named-tensor Step, which reports no CallDevice.
bool is_step(const Role& role) { return absl::EndsWith(role.name, "Step"); }

absl::StatusOr<torch::Tensor> encode(Engine& e, const std::string& id, CallDevice* where, const std::string& text) {
  TextEncoding request;
  request.text = text;
  request.max_tokens = 16;
  absl::StatusOr<CallResult<EncodedText>> called = e.encode_text(ModelHandle::by_id(id), request);
  if (!called.ok()) return called.status();
  if (where != nullptr) *where = called->report.where;
  const EncodedText& out = called->value;
  EXPECT_EQ(out.hidden_states.device().type(), torch::kCPU);
  std::vector<torch::Tensor> parts = {out.hidden_states.flatten()};
  if (out.pooled.defined()) parts.push_back(out.pooled.flatten());
  return torch::cat(parts);
}

// Anima's text conditioner on a prompt (its T5 tokenizer's ids) over five
// random Qwen rows.
absl::StatusOr<torch::Tensor> condition(Engine& e, const std::string& id, CallDevice* where) {
  torch::manual_seed(6);
  ConditionerRequest request;
  request.text = "a lighthouse at dawn";
  request.source_hidden_states = torch::randn({5, 24});
  request.source_mask = torch::ones({5}, torch::kBool);
  absl::StatusOr<CallResult<ConditionedText>> called = e.condition_text(ModelHandle::by_id(id), request);
  if (!called.ok()) return called.status();
  if (where != nullptr) *where = called->report.where;
  EXPECT_EQ(called->value.hidden_states.device().type(), torch::kCPU);
  return called->value.hidden_states.flatten();
}

std::vector<Role> roles() {
  const RoleCall text = [](Engine& e, const std::string& id, CallDevice* where) {
    return encode(e, id, where, "a lighthouse at dawn");
  };
  const RoleCall decode = [](Engine& e, const std::string& id, CallDevice* where) -> absl::StatusOr<torch::Tensor> {
    torch::manual_seed(4);
    absl::StatusOr<CallResult<torch::Tensor>> pixels = e.decode_image(ModelHandle::by_id(id), torch::randn({16, 6, 5}));
    if (!pixels.ok()) return pixels.status();
    if (where != nullptr) *where = pixels->report.where;
    return pixels->value.to(torch::kFloat32);
  };
  // A Step of the VAE: the decoder's float image, the encoder's moments.
  const auto vae_step = [](const char* input, std::vector<int64_t> shape, const char* output) -> RoleCall {
    return [=](Engine& e, const std::string& id, CallDevice*) -> absl::StatusOr<torch::Tensor> {
      torch::manual_seed(5);
      absl::StatusOr<NamedTensors> out = e.step(id, {{input, torch::randn(shape)}});
      if (!out.ok()) return out.status();
      return out->at(output);
    };
  };
  return {{"Qwen3", "pipe/text_encoder", text},
          {"Clip", "flux/text_encoder", text},
          {"T5", "flux/text_encoder_2", text},
          {"AnimaConditioner", "anima/text_conditioner", condition},
          {"VaeDecode", "pipe/vae", decode},
          {"VaeDecodeStep", "pipe/vae", vae_step("latents", {1, 16, 4, 6}, "image")},
          {"VaeEncodeStep", "pipe/vae", vae_step("image", {1, 3, 32, 24}, "moments")},
          // The Wan VAE fixture's: 16 latent channels, 3 latent frames to 9.
          {"WanVaeDecode", "wanvae", decode},
          {"WanVaeDecodeStep", "wanvae", vae_step("latents", {1, 16, 3, 4, 6}, "image")},
          {"WanVaeEncodeStep", "wanvae", vae_step("image", {1, 3, 9, 32, 24}, "moments")}};
}

class VramRolesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    PipelineSizes sizes = demo_pipeline_sizes();
    // Enough layers that streaming some of them is a plan of its own (two
    // slots of a layer are less than the whole).
    sizes.text_encoder.num_hidden_layers = 6;
    ASSERT_THAT(write_random_pipeline(sizes, dir_->path("models") + "/pipe", 3), IsOk());
    FluxPipelineSizes flux = demo_flux_pipeline_sizes();
    flux.clip.num_hidden_layers = 6;
    flux.t5.num_layers = 6;
    ASSERT_THAT(write_random_flux_pipeline(flux, dir_->path("models") + "/flux", 4), IsOk());
    // The shared fixture's (not a variant's: the roles' shapes are its own),
    // copied: the models folder confines its paths.
    const std::string wan_vae = testing::fixtures_dir() + "/wan-vae-tiny";
    std::filesystem::create_directories(dir_->path("models/wanvae"));
    std::filesystem::copy_file(wan_vae + "/config.json", dir_->path("models/wanvae/config.json"));
    std::filesystem::copy_file(wan_vae + "/vae/diffusion_pytorch_model.safetensors",
                               dir_->path("models/wanvae/diffusion_pytorch_model.safetensors"));
    // anima-tiny's conditioner with six blocks, over t5-tiny's tokenizer
    // (its vocabulary), random weights.
    nlohmann::json cond =
        testing::read_json_file(testing::fixtures_dir() + "/anima-tiny/text_conditioner/config.json");
    cond["num_layers"] = 6;
    cond["target_vocab_size"] = 512;
    const std::string folder = dir_->path("models/anima/text_conditioner");
    ASSERT_THAT(write_text_file(folder + "/config.json", cond.dump()), IsOk());
    absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe =
        find_family_for_config(cond.dump())->recipe_for_config(cond.dump(), folder + "/config.json");
    ASSERT_THAT(recipe, IsOk());
    ASSERT_THAT(
        write_random_weights(folder + "/diffusion_pytorch_model.safetensors", (*recipe)->parameter_table(), 5),
        IsOk());
    std::filesystem::copy(testing::fixtures_dir() + "/t5-tiny/tokenizer", dir_->path("models/anima/t5_tokenizer"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // An engine on the simulated device under `vram_bytes`, or on the CPU
  // with 0.
  void start(int64_t vram_bytes) {
    engine_.reset();
    EngineOptions o;
    o.models_dir = dir_->path("models");
    o.ram_budget = &ram_;
    if (vram_bytes > 0) {
      device_ = std::make_unique<SimDevice>(SimDeviceOptions{kGiB, 0});
      vram_ = std::make_unique<Budget>(Device::kCuda, vram_bytes);
      o.device = device_.get();
      o.vram_budget = vram_.get();
    }
    absl::StatusOr<std::unique_ptr<Engine>> e = Engine::create(o);
    ASSERT_THAT(e, IsOk());
    engine_ = std::move(*e);
  }
  void load(const std::string& path, const std::string& id) {
    ModelLoadRequest r;
    r.path = path;
    r.model_id = id;
    r.fp8 = Fp8Options{std::nullopt, Fp8Scaling::kNone};
    ASSERT_THAT(engine_->load(r), IsOk());
  }
  ModelInfo info(const std::string& id) {
    for (const ModelInfo& m : engine_->list()) {
      if (m.model_id == id) return m;
    }
    ADD_FAILURE() << id << " not listed";
    return {};
  }
  torch::Tensor run(const Role& role, const std::string& id, CallDevice* where = nullptr) {
    absl::StatusOr<torch::Tensor> out = role.call(*engine_, id, where);
    EXPECT_THAT(out, IsOk()) << role.name;
    return out.ok() ? *out : torch::Tensor();
  }
  // The role's answer on the CPU.
  torch::Tensor on_cpu(const Role& role) {
    start(0);
    load(role.path, "m");
    return run(role, "m");
  }
  // A whole placement of the role's model, and the call's activations
  // beside it (the rest of the budget's high water).
  struct Sizes {
    int64_t placement = 0;
    int64_t activations = 0;
  };
  Sizes sizes(const Role& role) {
    start(kGiB);
    load(role.path, "m");
    run(role, "m");
    Sizes s;
    s.placement = info("m").bytes[kCudaIndex];
    s.activations = vram_->snapshot().high_water_bytes - s.placement;
    EXPECT_GT(s.placement, 0) << role.name;
    EXPECT_GT(s.activations, 0) << role.name;
    return s;
  }

  static TempDir* dir_;
  Budget ram_{Device::kCpu, 4 * kGiB};
  std::unique_ptr<SimDevice> device_;
  std::unique_ptr<Budget> vram_;
  std::unique_ptr<Engine> engine_;
};

TempDir* VramRolesTest::dir_ = nullptr;

class VramRoleTest : public VramRolesTest, public ::testing::WithParamInterface<Role> {};

TEST_P(VramRoleTest, OnTheDeviceEqualsTheCpuBitForBit) {
  const Role& role = GetParam();
  const torch::Tensor cpu = on_cpu(role);
  ASSERT_TRUE(cpu.defined());
  start(kGiB);
  load(role.path, "m");
  EXPECT_EQ(info("m").bytes[kCudaIndex], 0);  // placed at its first call
  CallDevice where;
  const torch::Tensor out = run(role, "m", &where);
  ASSERT_TRUE(out.defined());
  EXPECT_TRUE(torch::equal(out, cpu));
  const ModelInfo m = info("m");
  EXPECT_GT(m.bytes[kCudaIndex], 0);
  EXPECT_THAT(m.vram_plan, AllOf(HasSubstr("all "), HasSubstr(" blocks resident")));
  EXPECT_THAT(m.vram_plan, ::testing::Not(HasSubstr("all 0 blocks")));  // the role names its blocks
  EXPECT_LE(device_->allocated_bytes(), m.bytes[kCudaIndex]);
  if (!is_step(role)) {
    EXPECT_EQ(where.device, "sim");
    EXPECT_TRUE(where.placed);
    EXPECT_EQ(where.plan, m.vram_plan);
    EXPECT_EQ(where.streamed_bytes, 0);
  }
  // Activations were reserved beside the placement, and given back.
  EXPECT_GT(vram_->snapshot().high_water_bytes, m.bytes[kCudaIndex]);
  EXPECT_EQ(vram_->snapshot().reserved_bytes, 0);
}

TEST_P(VramRoleTest, StreamingEqualsFullResidency) {
  const Role& role = GetParam();
  const Sizes whole = sizes(role);
  const torch::Tensor resident = run(role, "m");
  ASSERT_TRUE(resident.defined());
  // A byte less than the whole: the plan keeps what it can and streams the
  // rest through two slots.
  start(whole.placement - 1 + whole.activations);
  load(role.path, "m");
  CallDevice where;
  const torch::Tensor streamed = run(role, "m", &where);
  ASSERT_TRUE(streamed.defined());
  EXPECT_TRUE(torch::equal(streamed, resident));
  const ModelInfo m = info("m");
  EXPECT_THAT(m.vram_plan, HasSubstr("streamed"));
  EXPECT_GT(m.vram_streamed_bytes_per_step, 0);
  EXPECT_LT(m.bytes[kCudaIndex], whole.placement);
  EXPECT_LE(vram_->snapshot().high_water_bytes, vram_->capacity_bytes());
  if (!is_step(role)) {
    EXPECT_GT(where.streamed_bytes, 0);
  }
}

TEST_P(VramRoleTest, ABudgetForTwoOfThreeEvictsTheLeastRecentlyUsed) {
  const Role& role = GetParam();
  const Sizes one = sizes(role);
  start(2 * one.placement + one.placement / 2 + one.activations);
  for (const char* id : {"a", "b", "c"}) load(role.path, id);
  run(role, "a");
  run(role, "b");
  run(role, "a");  // b is now the least recently used placement
  CallDevice where;
  run(role, "c", &where);
  EXPECT_GT(info("a").bytes[kCudaIndex], 0);
  EXPECT_EQ(info("b").bytes[kCudaIndex], 0);
  EXPECT_GT(info("b").bytes[kCpuIndex], 0);  // evicted to RAM, still loaded
  EXPECT_GT(info("c").bytes[kCudaIndex], 0);
  if (!is_step(role)) {
    EXPECT_THAT(where.evicted, ElementsAre("b"));
  }
  EXPECT_EQ(engine_->vram_stats()->evictions, 1);
  EXPECT_LE(vram_->snapshot().high_water_bytes, vram_->capacity_bytes());
}

TEST_P(VramRoleTest, BelowTheMinimumIsRefusedWithNeededAvailableAndEvictableBytes) {
  const Role& role = GetParam();
  start(4096);
  load(role.path, "m");
  EXPECT_THAT(role.call(*engine_, "m", nullptr),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("model \"m\" on sim: the VRAM budget is 4.00 KiB"),
                             HasSubstr("cannot run this model: it needs at least"), HasSubstr("needed "),
                             HasSubstr("available "), HasSubstr("evictable "))));
  EXPECT_EQ(device_->allocated_bytes(), 0);
  EXPECT_EQ(vram_->snapshot().committed_bytes + vram_->snapshot().reserved_bytes, 0);
  EXPECT_GE(engine_->vram_stats()->rejections, 1);
}

INSTANTIATE_TEST_SUITE_P(Roles, VramRoleTest, ::testing::ValuesIn(roles()),
                         [](const ::testing::TestParamInfo<Role>& p) { return p.param.name; });

// A placement planned for a short prompt is re-planned for a long one
// (streaming some layers, rather than refusing the call), and grows back
// when a short prompt comes again with the room free.
TEST_F(VramRolesTest, ALargerCallReplansToStreamAndASmallerOneGrowsBack) {
  const std::string short_text = "a lighthouse";
  const std::string long_text(600, 'x');
  const auto encode_text = [&](const std::string& text, CallDevice* where) -> torch::Tensor {
    TextEncoding request;
    request.text = text;
    absl::StatusOr<CallResult<EncodedText>> out = engine_->encode_text(ModelHandle::by_id("m"), request);
    EXPECT_THAT(out, IsOk());
    if (out.ok() && where != nullptr) *where = out->report.where;
    return out.ok() ? out->value.hidden_states : torch::Tensor();
  };
  start(0);
  load("pipe/text_encoder", "m");
  const torch::Tensor cpu_long = encode_text(long_text, nullptr);
  // Each prompt's activations and the whole placement, measured.
  start(kGiB);
  load("pipe/text_encoder", "m");
  encode_text(short_text, nullptr);
  const int64_t whole = info("m").bytes[kCudaIndex];
  const int64_t short_activations = vram_->snapshot().high_water_bytes - whole;
  vram_->reset_high_water();
  encode_text(long_text, nullptr);
  const int64_t long_activations = vram_->snapshot().high_water_bytes - whole;
  ASSERT_GT(long_activations - short_activations, whole) << "the long prompt must need more than the whole model";

  // Room for the whole model beside the short prompt's activations; beside
  // the long one's only for part of it.
  start(long_activations + whole * 3 / 4);
  load("pipe/text_encoder", "m");
  CallDevice first;
  encode_text(short_text, &first);
  EXPECT_TRUE(first.placed);
  EXPECT_FALSE(first.replanned);
  EXPECT_THAT(first.plan, HasSubstr("all 6 blocks resident"));

  CallDevice larger;
  const torch::Tensor streamed = encode_text(long_text, &larger);
  EXPECT_TRUE(larger.replanned) << larger.summary();
  EXPECT_THAT(larger.plan, HasSubstr("streamed"));
  EXPECT_THAT(larger.summary(), HasSubstr("re-planned"));
  EXPECT_GT(larger.streamed_bytes, 0);
  EXPECT_TRUE(torch::equal(streamed, cpu_long));
  EXPECT_EQ(engine_->vram_stats()->rejections, 0);
  EXPECT_LE(vram_->snapshot().high_water_bytes, vram_->capacity_bytes());

  CallDevice smaller;
  encode_text(short_text, &smaller);
  EXPECT_TRUE(smaller.replanned) << smaller.summary();
  EXPECT_THAT(smaller.plan, HasSubstr("all 6 blocks resident"));

  // The same call again keeps its plan.
  CallDevice again;
  encode_text(short_text, &again);
  EXPECT_FALSE(again.placed);
  EXPECT_FALSE(again.replanned);
}

// A Generate on the device: the encode, every denoise step and the decode
// say they ran there, and the VRAM budget is never exceeded.
TEST_F(VramRolesTest, GenerateRunsEveryStageOnTheDevice) {
  GenerateRequest r;
  r.pipeline = "pipe";
  r.prompt = "a lighthouse at dawn";
  r.negative_prompt = "blurry";
  r.width = 32;
  r.height = 32;
  r.steps = 2;
  r.guidance_scale = 3.0;
  r.seed = 7;
  start(0);
  absl::StatusOr<GeneratedImage> cpu = generate(*engine_, dir_->path("models"), r);
  ASSERT_THAT(cpu, IsOk());

  start(kGiB);
  std::vector<GenerateEvent> events;
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) { events.push_back(e); };
  absl::StatusOr<GeneratedImage> image = generate(*engine_, dir_->path("models"), r, options);
  ASSERT_THAT(image, IsOk());
  EXPECT_TRUE(torch::equal(image->pixels, cpu->pixels));
  int stages = 0;
  for (const GenerateEvent& e : events) {
    if (e.stage == GenerateEvent::Stage::kEncode || e.stage == GenerateEvent::Stage::kDenoise ||
        e.stage == GenerateEvent::Stage::kDecode) {
      ++stages;
      EXPECT_EQ(e.device, "sim") << e.model_id << ": " << e.detail;
      if (e.stage != GenerateEvent::Stage::kDenoise || e.step == 1) {
        EXPECT_THAT(e.detail, HasSubstr("on sim: placed, all ")) << e.model_id;
      }
    }
  }
  EXPECT_EQ(stages, 1 + 2 + 1);
  for (const char* c : {"pipe/text_encoder", "pipe/transformer", "pipe/vae"}) EXPECT_GT(info(c).bytes[kCudaIndex], 0);
  EXPECT_LE(vram_->snapshot().high_water_bytes, vram_->capacity_bytes());
  EXPECT_EQ(vram_->snapshot().reserved_bytes, 0);
}

}  // namespace
}  // namespace diffusiond
