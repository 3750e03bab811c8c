// LoRA adapters on the engine's calls: a Step with an adapter computes what
// the model computes with the adapter attached, the term is linear in the
// weight, switching adapters reloads no base weight and re-reads no cached
// adapter, bad adapters are refused before the forward, and adapters that
// could never fit are refused before any load.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/util/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tools/random_models/lora_random.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"
#include "tools/random_models/flux_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The demo FLUX's proj_out: [64, 256].
constexpr int64_t kDim = 256;
constexpr int64_t kOut = 64;

class EngineAdaptersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_THAT(write_random_flux(demo_flux_config(), tmp_.path("flux"), 7), IsOk());
    ASSERT_THAT(write_lora_file(tmp_.path("a.safetensors"), peft_lora_module("proj_out", kDim, kOut, 4, 21)), IsOk());
    ASSERT_THAT(write_lora_file(tmp_.path("b.safetensors"), peft_lora_module("proj_out", kDim, kOut, 8, 31)), IsOk());
    start(int64_t{512} << 20);
  }

  void start(int64_t capacity) {
    EngineOptions options;
    options.models_dir = tmp_.path("");
    options.on_load_progress = [this](const std::string& model_id, const LoadProgress&) {
      MutexLock lock(&mu_);
      ++progress_[model_id];
    };
    ASSERT_THAT(testing::start_engine(options, capacity, &ram_, &engine_), IsOk());
    ModelLoadRequest load;
    load.path = "flux";
    ASSERT_THAT(engine_->load(load), IsOk());
  }

  int progress_of(const std::string& model_id) {
    MutexLock lock(&mu_);
    return progress_[model_id];
  }

  // The cache's keys of adapters.
  std::vector<std::string> adapter_keys() const {
    std::vector<std::string> keys;
    for (const CacheEntryStats& e : engine_->stats().entries) {
      if (is_adapter_key(e.key)) keys.push_back(e.key);
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  static NamedTensors inputs() {
    torch::manual_seed(5);
    constexpr int64_t kTokens = 16, kText = 5;
    return {{"hidden_states", torch::randn({1, kTokens, 64})},
            {"encoder_hidden_states", torch::randn({1, kText, 256})},
            {"pooled_projections", torch::randn({1, 128})},
            {"timestep", torch::full({1}, 0.5)},
            {"guidance", torch::full({1}, 3.5)},
            {"img_ids", torch::zeros({kTokens, 3})},
            {"txt_ids", torch::zeros({kText, 3})}};
  }

  torch::Tensor step(const std::vector<AdapterRequest>& adapters) {
    absl::StatusOr<NamedTensors> out = engine_->step("flux", inputs(), {}, adapters);
    EXPECT_THAT(out, IsOk());
    return out.ok() ? out->at("out") : torch::Tensor();
  }

  TempDir tmp_;
  // Before the engine, whose load hook counts into them.
  Mutex mu_;
  std::map<std::string, int> progress_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

// The engine's Step with an adapter adds a term linear in the weight (the
// adapter beside the linear), none at weight 0, and nothing stays attached.
TEST_F(EngineAdaptersTest, StepAddsTheAdaptersTerm) {
  const torch::Tensor base = step({});
  const torch::Tensor one = step({{"a.safetensors", 1.0}});
  const torch::Tensor half = step({{"a.safetensors", 0.5}});
  ASSERT_TRUE(base.defined() && one.defined() && half.defined());
  EXPECT_GT(max_abs_diff(one, base), 1e-3);
  EXPECT_LT(max_abs_diff(one - base, 2 * (half - base)), 1e-4);
  EXPECT_EQ(max_abs_diff(step({{"a.safetensors", 0.0}}), base), 0);
  // Nothing stays attached after the call.
  EXPECT_EQ(max_abs_diff(step({}), base), 0);
}

// Two adapters stack: their terms add.
TEST_F(EngineAdaptersTest, StackedAdaptersAdd) {
  const torch::Tensor base = step({});
  const torch::Tensor a = step({{"a.safetensors", 0.7}});
  const torch::Tensor b = step({{"b.safetensors", -0.3}});
  const torch::Tensor both = step({{"a.safetensors", 0.7}, {"b.safetensors", -0.3}});
  EXPECT_LT(max_abs_diff(both - base, (a - base) + (b - base)), 1e-4);
}

// Switching adapters loads each once and never the base again; a cached
// adapter is not read again (its file may even be gone bad meanwhile).
TEST_F(EngineAdaptersTest, SwitchingAdaptersReloadsNothing) {
  const int base_loads = progress_of("flux");
  const torch::Tensor first = step({{"a.safetensors", 1.0}});
  step({{"b.safetensors", 1.0}});
  EXPECT_EQ(adapter_keys(), (std::vector<std::string>{"lora:flux:float32:a.safetensors",
                                                     "lora:flux:float32:b.safetensors"}));
  { std::ofstream(tmp_.path("a.safetensors"), std::ios::trunc) << "not a LoRA"; }
  EXPECT_EQ(max_abs_diff(step({{"a.safetensors", 1.0}}), first), 0);
  // Its id (the cache key) names it too; another architecture's does not.
  EXPECT_EQ(max_abs_diff(step({{"lora:flux:float32:a.safetensors", 1.0}}), first), 0);
  EXPECT_THAT(engine_->step("flux", inputs(), {}, {{"lora:wan:float32:a.safetensors", 1.0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is for wan")));
  EXPECT_EQ(progress_of("flux"), base_loads);
  // Adapters are no models: the listing leaves them out.
  for (const ModelInfo& m : engine_->list()) EXPECT_EQ(m.model_id, "flux");
}

// A bad adapter is refused, naming it, before the forward runs; nothing is
// left attached or cached.
TEST_F(EngineAdaptersTest, BadAdaptersAreRefused) {
  const torch::Tensor base = step({});
  // Z-Image's module names: no linear of FLUX.
  LoraTensors other = peft_lora_module("layers.0.attention.to_q", kDim, kDim, 4, 41);
  ASSERT_THAT(write_lora_file(tmp_.path("z.safetensors"), other), IsOk());
  EXPECT_THAT(engine_->step("flux", inputs(), {}, {{"z.safetensors", 1.0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("adapter \"z.safetensors\"")));
  LoraTensors nan = peft_lora_module("proj_out", kDim, kOut, 4, 51);
  nan[0].second[1][3] = std::nan("");
  ASSERT_THAT(write_lora_file(tmp_.path("nan.safetensors"), nan), IsOk());
  EXPECT_THAT(engine_->step("flux", inputs(), {}, {{"a.safetensors", 1.0}, {"nan.safetensors", 1.0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("nan.safetensors"), HasSubstr("NaN"))));
  // A rank or shape that does not match its target.
  ASSERT_THAT(write_lora_file(tmp_.path("wide.safetensors"), peft_lora_module("proj_out", 2 * kDim, kOut, 4, 61)),
              IsOk());
  EXPECT_THAT(engine_->step("flux", inputs(), {}, {{"wide.safetensors", 1.0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wide.safetensors")));
  EXPECT_THAT(engine_->step("flux", inputs(), {}, {{"a.safetensors", std::nan("")}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not finite")));
  EXPECT_THAT(engine_->step("flux", inputs(), {}, {{"../outside.safetensors", 1.0}}),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside.safetensors")));
  EXPECT_THAT(engine_->step("flux", inputs(), {}, {{"missing.safetensors", 1.0}}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.safetensors")));
  EXPECT_EQ(max_abs_diff(step({}), base), 0);
  // An adapter's key names no model.
  EXPECT_THAT(engine_->step("lora:flux:float32:a.safetensors", inputs()), StatusIs(absl::StatusCode::kNotFound, HasSubstr("is an adapter, not a model")));
  ModelLoadRequest named;
  named.path = "flux";
  named.model_id = "lora:mine";
  EXPECT_THAT(engine_->load(named), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names adapters")));
}

// A call with adapters reserves the terms' working memory with its
// activations: the largest rank / in of their modules (b: rank 8 on
// proj_out, 256 wide) more than the same call without.
TEST_F(EngineAdaptersTest, TheTermsWorkingMemoryIsReservedWithTheActivations) {
  step({{"b.safetensors", 1.0}});  // loaded and cached: its bytes are committed from here on
  const auto reserved_by = [&](const std::vector<AdapterRequest>& adapters) {
    const int64_t committed = ram_->snapshot().committed_bytes;
    ram_->reset_high_water();
    EXPECT_TRUE(step(adapters).defined());
    return ram_->snapshot().high_water_bytes - committed;
  };
  const int64_t plain = reserved_by({});
  ASSERT_GT(plain, 0);
  EXPECT_EQ(reserved_by({{"b.safetensors", 1.0}}),
            plain + static_cast<int64_t>(std::ceil(static_cast<double>(plain) * 8.0 / kDim)));
}

// Adapters that could never fit beside the model are refused before any
// load, naming the bytes; ones that fit only by evicting an unpinned
// adapter evict it through the same LRU.
TEST_F(EngineAdaptersTest, AdaptersBeyondTheBudgetAreRefusedBeforeAnyLoad) {
  // A budget that holds the model's load and 2 MiB more.
  ASSERT_THAT(engine_->unload("flux", UnloadOptions()), IsOk());
  ModelLoadRequest load;
  load.path = "flux";
  absl::StatusOr<ModelInfo> described = engine_->inspect(load);
  ASSERT_THAT(described, IsOk());
  const int64_t capacity = described->bytes[kCpuIndex] + (int64_t{2} << 20);
  start(capacity);
  // An adapter on proj_out (256 + 64 floats a rank) larger than the budget.
  const int64_t rank = capacity / ((kDim + kOut) * 4) + 1;
  const int64_t bytes = rank * (kDim + kOut) * 4;
  ASSERT_THAT(write_lora_file(tmp_.path("big.safetensors"), peft_lora_module("proj_out", kDim, kOut, rank, 71)),
              IsOk());
  const int64_t misses = engine_->stats().misses;
  EXPECT_THAT(engine_->step("flux", inputs(), {}, {{"a.safetensors", 1.0}, {"big.safetensors", 1.0}}),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr(absl::StrCat("adapters need ", bytes + 4 * (kDim + kOut) * 4, " bytes")),
                             HasSubstr("RAM budget"))));
  EXPECT_EQ(engine_->stats().misses, misses);
  EXPECT_THAT(adapter_keys(), IsEmpty());
}

}  // namespace
}  // namespace diffusiond
