// Engine over a real cache and a tiny random Z-Image: confinement, single
// flight with shared progress, option mismatches, cancellation, budget
// refusals, list/unload, Step, Denoise and the drain lifecycle.
#include "core/engine/engine.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/checkpoint/checkpoint.h"
#include "core/models/model_loader.h"
#include "tools/random_models/random_weights.h"
#include "tools/random_models/z_image_random.h"
#include "core/util/file_text.h"
#include "core/util/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/engine_under_budget.h"
#include "tests/testing/tiny_z_image.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> ids(const std::vector<ModelInfo>& models) {
  std::vector<std::string> out;
  for (const ModelInfo& m : models) out.push_back(m.model_id);
  return out;
}

// A one-shot event between threads.
class Signal {
 public:
  void notify() {
    MutexLock lock(&mu_);
    done_ = true;
    cv_.signal_all();
  }
  // Returns false if `timeout` passed first (the test then fails, not hangs).
  bool wait(absl::Duration timeout = absl::Seconds(30)) {
    const absl::Time deadline = absl::Now() + timeout;
    MutexLock lock(&mu_);
    while (!done_) {
      if (cv_.wait_until(&mu_, deadline) && !done_) return false;
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

// Counts callers that have seen progress; a test waits for all of them.
class Tally {
 public:
  void add() {
    MutexLock lock(&mu_);
    ++count_;
    cv_.signal_all();
  }
  // Returns false if `timeout` passed before the count reached `n`.
  bool wait_for(int n, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    MutexLock lock(&mu_);
    while (count_ < n) {
      if (cv_.wait_until(&mu_, deadline) && count_ < n) return false;
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

// What one caller of load() saw through its watcher. Thread-safe.
class Progress {
 public:
  // `give_up` decides from the events seen so far when this caller gives
  // up (its token fires); `tally`, if given, counts this caller at its first
  // event.
  LoadWatcher watcher(std::function<bool(int events)> give_up = nullptr, Tally* tally = nullptr) {
    return LoadWatcher{[this, tally, give_up](const LoadProgress& p) {
                         int seen = 0;
                         {
                           MutexLock lock(&mu_);
                           events_.push_back(p);
                           seen = static_cast<int>(events_.size());
                         }
                         if (seen == 1 && tally != nullptr) tally->add();
                         if (give_up && give_up(seen)) cancel_.cancel();
                       },
                       cancel_.token()};
  }
  std::vector<LoadProgress> events() {
    MutexLock lock(&mu_);
    return events_;
  }

 private:
  Mutex mu_;
  std::vector<LoadProgress> events_ ABSL_GUARDED_BY(mu_);
  CancellationSource cancel_;
};

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path("models");
    ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(1), models_dir_ + "/tiny", 1), IsOk());
  }

  // (Re)creates the engine under a RAM budget of `capacity` bytes.
  void start(int64_t capacity = int64_t{1} << 30, CacheObserver* observer = nullptr) {
    EngineOptions o;
    o.models_dir = models_dir_;
    o.observer = observer;
    ASSERT_THAT(::diffusiond::testing::start_engine(o, capacity, &ram_, &engine_), IsOk());
  }

  // The plan of `relative` under the engine's default options (FP8 e4m3fn,
  // float32 compute).
  LoadPlan plan_of(const std::string& relative) {
    absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(models_dir_ + "/" + relative);
    EXPECT_THAT(c, IsOk());
    ModelLoadOptions lo;
    lo.fp8.format = Fp8Format::kE4M3Fn;
    absl::StatusOr<ModelPlan> plan = plan_model(**c, lo);
    EXPECT_THAT(plan, IsOk());
    return std::move(plan->plan);
  }

  static ModelLoadRequest request(const std::string& path, const std::string& id = "") {
    ModelLoadRequest r;
    r.path = path;
    r.model_id = id;
    return r;
  }

  EngineDenoiseRequest denoise_request(const std::string& id, int steps) {
    EngineDenoiseRequest r;
    r.model = ModelHandle::by_id(id);
    r.latent_shape = {16, 4, 4};
    r.seed = 5;
    r.steps = steps;
    r.shift = 0;  // the model's default
    torch::manual_seed(2);
    r.positive.tensors["cap_feats"] = torch::randn({5, 32});
    return r;
  }

  BudgetSnapshot ram() const { return ram_->snapshot(); }

  // Teardown order: the engine (and its cache) before the budget.
  TempDir dir_;
  std::string models_dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineTest, CreateChecksItsOptions) {
  Budget ram(Device::kCpu, 1 << 20);
  EngineOptions o;
  o.models_dir = dir_.path("absent");
  o.ram_budget = &ram;
  EXPECT_THAT(Engine::create(o), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("absent")));
  o.models_dir = models_dir_;
  o.ram_budget = nullptr;
  EXPECT_THAT(Engine::create(o), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST_F(EngineTest, LoadsAreConfinedToTheModelsDirectory) {
  start();
  dir_.write("outside/secret/config.json", "{}");
  std::filesystem::create_directory_symlink(dir_.path("outside"), models_dir_ + "/escape");

  EXPECT_THAT(engine_->load(request("../outside/secret")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside the models directory")));
  EXPECT_THAT(engine_->load(request("../x")), StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("../x")));
  EXPECT_THAT(engine_->load(request(dir_.path("outside/secret"))),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside the models directory")));
  EXPECT_THAT(engine_->load(request("escape/secret")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("resolves to")));
  EXPECT_THAT(engine_->load(request("missing")), StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing")));
  EXPECT_THAT(engine_->load(request("")), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("path")));
  EXPECT_EQ(engine_->stats().misses, 0);  // no loader ran

  // An absolute path inside the directory is fine; the info says where.
  absl::StatusOr<ModelInfo> info = engine_->load(request(models_dir_ + "/tiny", "abs"));
  ASSERT_THAT(info, IsOk());
  EXPECT_EQ(info->path, std::filesystem::canonical(models_dir_ + "/tiny").string());
}

TEST_F(EngineTest, LoadDescribesTheModel) {
  start();
  absl::StatusOr<ModelInfo> fp8 = engine_->load(request("tiny"));
  ASSERT_THAT(fp8, IsOk());
  EXPECT_EQ(fp8->model_id, "tiny");  // the path as given
  EXPECT_EQ(fp8->path, std::filesystem::canonical(models_dir_ + "/tiny").string());
  EXPECT_EQ(fp8->architecture, "z-image");
  EXPECT_FALSE(fp8->description.empty());
  EXPECT_EQ(fp8->compute_dtype, ComputeDtype::kFloat32);
  EXPECT_EQ(fp8->fp8, Fp8Format::kE4M3Fn);  // the engine's default
  EXPECT_GT(fp8->fp8_tensors, 0);
  EXPECT_LT(fp8->fp8_tensors, fp8->tensors);  // norms and biases stay
  EXPECT_EQ(fp8->bytes[kCpuIndex], plan_of("tiny").final_bytes);
  EXPECT_EQ(ram().committed_bytes, fp8->bytes[kCpuIndex]);
  EXPECT_EQ(ram().reserved_bytes, 0);
  EXPECT_EQ(fp8->pins, 0);
  EXPECT_EQ(fp8->leases, 0);

  ModelLoadRequest off = request("tiny", "tiny-f32");
  off.fp8 = Fp8Options{};
  absl::StatusOr<ModelInfo> plain = engine_->load(off);
  ASSERT_THAT(plain, IsOk());
  EXPECT_FALSE(plain->fp8.has_value());
  EXPECT_EQ(plain->fp8_tensors, 0);
  EXPECT_EQ(plain->tensors, fp8->tensors);
  EXPECT_GT(plain->bytes[kCpuIndex], fp8->bytes[kCpuIndex]);
  EXPECT_EQ(ram().committed_bytes, fp8->bytes[kCpuIndex] + plain->bytes[kCpuIndex]);

  ModelLoadRequest bf16 = request("tiny", "tiny-bf16");
  bf16.compute_dtype = ComputeDtype::kBFloat16;
  absl::StatusOr<ModelInfo> half = engine_->load(bf16);
  ASSERT_THAT(half, IsOk());
  EXPECT_EQ(half->compute_dtype, ComputeDtype::kBFloat16);
}

TEST_F(EngineTest, CacheHitAnswersWithTheSameInfo) {
  start();
  absl::StatusOr<ModelInfo> first = engine_->load(request("tiny"));
  ASSERT_THAT(first, IsOk());
  absl::StatusOr<ModelInfo> again = engine_->load(request("tiny"));
  ASSERT_THAT(again, IsOk());
  absl::StatusOr<ModelInfo> hit = engine_->find(request("tiny"));
  ASSERT_THAT(hit, IsOk());
  for (const ModelInfo* m : {&*again, &*hit}) {
    EXPECT_EQ(m->model_id, first->model_id);
    EXPECT_EQ(m->path, first->path);
    EXPECT_EQ(m->architecture, first->architecture);
    EXPECT_EQ(m->description, first->description);
    EXPECT_EQ(m->fp8, first->fp8);
    EXPECT_EQ(m->tensors, first->tensors);
    EXPECT_EQ(m->fp8_tensors, first->fp8_tensors);
    EXPECT_EQ(m->bytes, first->bytes);
    EXPECT_EQ(m->pins, 0);
  }
  EXPECT_EQ(engine_->stats().misses, 1);
  EXPECT_EQ(ram().committed_bytes, first->bytes[kCpuIndex]);
}

TEST_F(EngineTest, DefaultIdIsThePathInsideTheModelsDirectory) {
  start();
  absl::StatusOr<ModelInfo> absolute = engine_->load(request(models_dir_ + "/tiny"));
  ASSERT_THAT(absolute, IsOk());
  EXPECT_EQ(absolute->model_id, "tiny");
  absl::StatusOr<ModelInfo> dotted = engine_->load(request("./tiny"));
  ASSERT_THAT(dotted, IsOk());
  EXPECT_EQ(dotted->model_id, "tiny");
  EXPECT_EQ(engine_->stats().misses, 1);  // one model, however it was named
  EXPECT_THAT(ids(engine_->list()), ElementsAre("tiny"));
}

TEST_F(EngineTest, AHugeModelIdIsQuotedBoundedInErrors) {
  start();
  const std::string huge(100000, 'm');
  const absl::Status status = engine_->find(request("tiny", huge)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_LT(status.message().size(), 1000u);
  EXPECT_THAT(std::string(status.message()), HasSubstr("(100000 bytes)"));
}

TEST_F(EngineTest, FindDoesNotLoad) {
  start();
  EXPECT_THAT(engine_->find(request("tiny")), StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"tiny\" is not cached")));
  EXPECT_EQ(engine_->stats().misses, 0);
  EXPECT_THAT(engine_->list(), IsEmpty());
  EXPECT_EQ(ram().committed_bytes, 0);
}

TEST_F(EngineTest, SecondLoadWithOtherOptionsSaysWhatDiffers) {
  ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(1), models_dir_ + "/other", 2), IsOk());
  start();
  ASSERT_THAT(engine_->load(request("tiny", "m")), IsOk());

  ModelLoadRequest no_fp8 = request("tiny", "m");
  no_fp8.fp8 = Fp8Options{};
  EXPECT_THAT(engine_->load(no_fp8),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("\"m\" is already loaded"), HasSubstr("FP8 e4m3fn (asked: off)"))));
  ModelLoadRequest e5m2 = request("tiny", "m");
  e5m2.fp8 = Fp8Options{Fp8Format::kE5M2, Fp8Scaling::kNone};
  EXPECT_THAT(engine_->load(e5m2),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("FP8 e4m3fn (asked: e5m2)")));
  ModelLoadRequest bf16 = request("tiny", "m");
  bf16.compute_dtype = ComputeDtype::kBFloat16;
  EXPECT_THAT(engine_->load(bf16),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("at float32 (asked: bfloat16)")));
  const std::string other = std::filesystem::canonical(models_dir_ + "/other").string();
  EXPECT_THAT(engine_->load(request("other", "m")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("(asked: " + other + ")")));
  EXPECT_THAT(engine_->find(no_fp8), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("FP8")));

  // Saying the defaults out loud is the same model.
  ModelLoadRequest explicit_defaults = request("./tiny", "m");
  explicit_defaults.fp8 = Fp8Options{Fp8Format::kE4M3Fn, Fp8Scaling::kNone};
  explicit_defaults.compute_dtype = ComputeDtype::kFloat32;
  EXPECT_THAT(engine_->load(explicit_defaults), IsOk());
  EXPECT_EQ(engine_->stats().misses, 1);
  EXPECT_THAT(ids(engine_->list()), ElementsAre("m"));
}

// A config_path named again is compared by content: another config (or a
// malformed one) used to answer OK with the model built from the first.
TEST_F(EngineTest, SecondLoadWithAnotherConfigSaysSo) {
  start();
  absl::StatusOr<std::string> config = read_text_file(models_dir_ + "/tiny/config.json");
  ASSERT_THAT(config, IsOk());
  ASSERT_THAT(write_text_file(models_dir_ + "/same.json", *config), IsOk());
  nlohmann::json other = nlohmann::json::parse(*config);
  other["rope_theta"] = 500.0;
  ASSERT_THAT(write_text_file(models_dir_ + "/other.json", other.dump()), IsOk());
  ASSERT_THAT(write_text_file(models_dir_ + "/broken.json", "{\"_class_name\": "), IsOk());
  const auto with_config = [&](const std::string& config_path) {
    ModelLoadRequest r = request("tiny", "m");
    r.config_path = config_path;
    return r;
  };
  ASSERT_THAT(engine_->load(with_config("tiny/config.json")), IsOk());
  EXPECT_THAT(engine_->load(with_config("same.json")), IsOk());  // the same bytes elsewhere
  EXPECT_THAT(engine_->load(with_config("other.json")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("\"m\" is already loaded with config "), HasSubstr("other.json, other content"))));
  EXPECT_THAT(engine_->load(with_config("broken.json")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("broken.json")));
  EXPECT_THAT(engine_->load(request("tiny", "m")), IsOk());  // no config named: not compared
  EXPECT_EQ(engine_->stats().misses, 1);
}

// Holds the first eviction until `callers` callers of load() have seen
// progress: the load that evicts is then in flight with all of them joined.
class EvictionGate : public CacheObserver {
 public:
  explicit EvictionGate(int callers) : callers_(callers) {}
  void on_cache_event(const CacheEvent& e) override {
    if (e.kind != CacheEvent::Kind::kEvicted || held_.exchange(true)) return;
    if (!tally_.wait_for(callers_, absl::Seconds(30))) timed_out_ = true;
  }
  Tally* tally() { return &tally_; }
  bool timed_out() const { return timed_out_; }

 private:
  const int callers_;
  Tally tally_;
  std::atomic<bool> held_{false};
  std::atomic<bool> timed_out_{false};
};

TEST_F(EngineTest, ConcurrentLoadsShareOneLoadAndItsProgress) {
  constexpr int kCallers = 4;
  std::vector<Progress> callers(kCallers);
  EvictionGate gate(kCallers);
  // Room for one model and the reservation of a second only after evicting
  // the first, so the shared load evicts `filler` mid-way.
  const LoadPlan plan = plan_of("tiny");
  start(plan.reservation_bytes() + plan.final_bytes - 1, &gate);
  ASSERT_THAT(engine_->load(request("tiny", "filler")), IsOk());
  const CacheStats before = engine_->stats();

  std::vector<absl::StatusOr<ModelInfo>> results(kCallers, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      results[i] = engine_->load(request("tiny", "shared"), callers[i].watcher(nullptr, gate.tally()));
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_FALSE(gate.timed_out()) << "not every caller saw progress while the load ran";

  const CacheStats after = engine_->stats();
  EXPECT_EQ(after.misses - before.misses, 1);  // one loader for four callers
  EXPECT_EQ(after.hits - before.hits, kCallers - 1);
  EXPECT_EQ(after.evictions, 1);
  for (int i = 0; i < kCallers; ++i) {
    ASSERT_THAT(results[i], IsOk()) << "caller " << i;
    EXPECT_EQ(results[i]->bytes, results[0]->bytes);
    const std::vector<LoadProgress> events = callers[i].events();
    ASSERT_GE(events.size(), 2u) << "caller " << i;
    // Everyone saw the load through to its last tensor.
    EXPECT_EQ(events.back().tensors_done, events.back().total_tensors) << "caller " << i;
    EXPECT_EQ(events.back().total_tensors, static_cast<int64_t>(plan.tensors.size()));
  }
  EXPECT_THAT(ids(engine_->list()), ElementsAre("shared"));  // the evicted one is forgotten
  engine_.reset();  // before the observer it points at
}

TEST_F(EngineTest, LoadStopsWhenEveryWatcherGaveUp) {
  start();
  Progress impatient;
  absl::StatusOr<ModelInfo> info =
      engine_->load(request("tiny"), impatient.watcher([](int events) { return events >= 3; }));
  EXPECT_THAT(info, StatusIs(absl::StatusCode::kCancelled, ::testing::_));
  // The start, then two tensors; it stopped before the third.
  EXPECT_EQ(impatient.events().size(), 3u);
  EXPECT_LT(impatient.events().back().tensors_done, impatient.events().back().total_tensors);
  EXPECT_EQ(ram().committed_bytes, 0);
  EXPECT_EQ(ram().reserved_bytes, 0);
  EXPECT_THAT(engine_->list(), IsEmpty());
  EXPECT_THAT(engine_->stats().entries, IsEmpty());

  // The next caller loads afresh.
  EXPECT_THAT(engine_->load(request("tiny")), IsOk());
}

TEST_F(EngineTest, TooSmallBudgetRefusesAndKeepsWhatIsCached) {
  ASSERT_THAT(write_random_z_image(::diffusiond::testing::tiny_z_image_config(3), models_dir_ + "/big", 4), IsOk());
  const int64_t tiny = plan_of("tiny").reservation_bytes();
  const int64_t big = plan_of("big").reservation_bytes();
  ASSERT_GT(big, tiny);
  start(tiny);  // even an empty cache cannot admit `big`
  absl::StatusOr<ModelInfo> loaded = engine_->load(request("tiny"));
  ASSERT_THAT(loaded, IsOk());

  EXPECT_THAT(engine_->load(request("big")),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("cannot make room on")));
  EXPECT_EQ(engine_->stats().evictions, 0);
  EXPECT_EQ(engine_->stats().rejections, 1);
  EXPECT_THAT(ids(engine_->list()), ElementsAre("tiny"));
  EXPECT_EQ(ram().committed_bytes, loaded->bytes[kCpuIndex]);
  EXPECT_EQ(ram().reserved_bytes, 0);
}

TEST_F(EngineTest, ListShowsReadyModelsAndUnloadFreesThem) {
  start();
  absl::StatusOr<ModelInfo> a = engine_->load(request("tiny", "a"));
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<ModelInfo> b = engine_->load(request("tiny", "b"));
  ASSERT_THAT(b, IsOk());
  std::vector<ModelInfo> listed = engine_->list();
  EXPECT_THAT(ids(listed), ElementsAre("b", "a"));  // most recently used first
  EXPECT_EQ(listed[1].bytes, a->bytes);
  EXPECT_EQ(listed[1].architecture, "z-image");

  absl::StatusOr<UnloadResult> freed = engine_->unload("a", UnloadOptions{});
  ASSERT_THAT(freed, IsOk());
  EXPECT_EQ(freed->freed_bytes[kCpuIndex], a->bytes[kCpuIndex]);
  EXPECT_THAT(ids(engine_->list()), ElementsAre("b"));
  EXPECT_EQ(ram().committed_bytes, b->bytes[kCpuIndex]);
  EXPECT_THAT(engine_->unload("a", UnloadOptions{}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'a' is not loaded")));
  EXPECT_THAT(engine_->find(request("tiny", "a")), StatusIs(absl::StatusCode::kNotFound, ::testing::_));

  // Forgotten, so it may come back with other options.
  ModelLoadRequest again = request("tiny", "a");
  again.fp8 = Fp8Options{};
  absl::StatusOr<ModelInfo> back = engine_->load(again);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->fp8_tensors, 0);

  // A waiting unload of a leased model stops when its caller cancels.
  absl::StatusOr<LeaseId> lease = engine_->acquire_lease("b", absl::Hours(1));
  ASSERT_THAT(lease, IsOk());
  CancellationSource gave_up;
  gave_up.cancel();
  UnloadOptions cancelled;
  cancelled.cancel = gave_up.token();
  EXPECT_THAT(engine_->unload("b", cancelled), StatusIs(absl::StatusCode::kCancelled, HasSubstr("stays loaded")));
  EXPECT_THAT(engine_->release_lease(*lease), IsOk());

  EXPECT_EQ(engine_->unload_all(absl::Seconds(10)), b->bytes[kCpuIndex] + back->bytes[kCpuIndex]);
  EXPECT_EQ(ram().committed_bytes, 0);
  EXPECT_THAT(engine_->list(), IsEmpty());
}

// Identical loads racing unloads of the same id once got FAILED_PRECONDITION
// saying the model was loaded "from  (asked: …) with FP8 off": an answer read
// a description that no longer belonged to the model it pinned. Every answer
// must now be the model as asked, or a refusal that says the unload is why.
TEST_F(EngineTest, IdenticalLoadsRacingUnloadsNeverClaimTheModelDiffers) {
  start();
  constexpr int kLoaders = 4, kLoadsEach = 150;
  std::atomic<int> loaders_left{kLoaders};
  std::vector<std::vector<absl::Status>> outcomes(kLoaders);
  std::vector<std::thread> threads;
  for (int i = 0; i < kLoaders; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kLoadsEach; ++n) {
        absl::StatusOr<ModelInfo> info = n % 3 == 0 ? engine_->find(request("tiny", "r")) : engine_->load(request("tiny", "r"));
        if (info.ok() && info->path != models_dir_ + "/tiny") {
          outcomes[i].push_back(absl::InternalError("answered with the path " + info->path));
        } else {
          outcomes[i].push_back(info.status());
        }
      }
      loaders_left.fetch_sub(1);
    });
  }
  int unloads = 0;
  while (loaders_left.load() > 0) {
    UnloadOptions o;
    o.wait = unloads % 2 == 0;
    o.timeout = absl::Seconds(5);
    (void)engine_->unload("r", o);
    ++unloads;
  }
  for (std::thread& t : threads) t.join();
  int ok = 0;
  for (const std::vector<absl::Status>& statuses : outcomes) {
    for (const absl::Status& s : statuses) {
      if (s.ok()) {
        ++ok;
        continue;
      }
      // Refused because of the unload: the model is going (ABORTED) or gone
      // (find's NOT_FOUND).
      EXPECT_TRUE(absl::IsAborted(s) || absl::IsNotFound(s)) << s;
      EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("already loaded")));
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(unloads, 1);
  (void)engine_->unload_all(absl::Seconds(10));
  EXPECT_EQ(ram().committed_bytes, 0);
  EXPECT_EQ(ram().reserved_bytes, 0);
}

TEST_F(EngineTest, StepRunsTheNamedInputs) {
  start();
  ASSERT_THAT(engine_->load(request("tiny")), IsOk());
  torch::manual_seed(3);
  const NamedTensors inputs = {{"x", torch::randn({1, 16, 1, 4, 4})},
                               {"t", torch::tensor({0.5f})},
                               {"cap_feats_0", torch::randn({5, 32})}};
  absl::StatusOr<NamedTensors> out = engine_->step("tiny", inputs);
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->count("out"), 1u);
  EXPECT_EQ(out->at("out").sizes().vec(), (std::vector<int64_t>{1, 16, 1, 4, 4}));
  EXPECT_TRUE(torch::isfinite(out->at("out")).all().item<bool>());
  EXPECT_EQ(engine_->list()[0].pins, 0);  // the step's pin is gone

  EXPECT_THAT(engine_->step("nope", inputs),
              StatusIs(absl::StatusCode::kNotFound, AllOf(HasSubstr("\"nope\""), HasSubstr("load it first"))));
  EXPECT_THAT(engine_->step("tiny", {{"x", inputs.at("x")}, {"t", inputs.at("t")}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cap_feats_0")));
}

TEST_F(EngineTest, DenoiseReturnsLatents) {
  start();
  ASSERT_THAT(engine_->load(request("tiny")), IsOk());
  int steps_seen = 0;
  DenoiseOptions options;
  options.on_step = [&](const StepEvent& e) { steps_seen = e.step; };
  absl::StatusOr<torch::Tensor> latents = engine_->denoise(denoise_request("tiny", 2), options);
  ASSERT_THAT(latents, IsOk());
  EXPECT_EQ(latents->sizes().vec(), (std::vector<int64_t>{16, 4, 4}));
  EXPECT_EQ(latents->scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::isfinite(*latents).all().item<bool>());
  EXPECT_EQ(steps_seen, 2);
  // Shift 0 is the model's default (3.0), not a shift of zero.
  EXPECT_FALSE(torch::equal(*latents, seeded_noise({16, 4, 4}, 5)));
  EngineDenoiseRequest explicit_shift = denoise_request("tiny", 2);
  explicit_shift.shift = 3.0;
  absl::StatusOr<torch::Tensor> same = engine_->denoise(explicit_shift, {});
  ASSERT_THAT(same, IsOk());
  EXPECT_TRUE(torch::equal(*latents, *same));
}

TEST_F(EngineTest, DenoiseRejectsBadRequests) {
  start();
  ASSERT_THAT(engine_->load(request("tiny")), IsOk());
  EngineDenoiseRequest channels = denoise_request("tiny", 1);
  channels.latent_shape = {15, 4, 4};
  EXPECT_THAT(engine_->denoise(channels, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("latents must be [16, H, W]"), HasSubstr("got [15, 4, 4]"))));
  EngineDenoiseRequest odd = denoise_request("tiny", 1);
  odd.latent_shape = {16, 5, 4};
  EXPECT_THAT(engine_->denoise(odd, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("multiples of 2"), HasSubstr("got [16, 5, 4]"))));
  // Beyond the model's RoPE positions: refused before 64 TiB of noise is drawn.
  EngineDenoiseRequest huge = denoise_request("tiny", 1);
  huge.latent_shape = {16, int64_t{1} << 20, int64_t{1} << 20};
  EXPECT_THAT(engine_->denoise(huge, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("from 2 to 1024")));
  EngineDenoiseRequest given = denoise_request("tiny", 1);
  given.initial_latents = torch::zeros({16, 4, 6});
  given.latent_shape = {16, 4, 4};  // ignored: the given latents decide
  EXPECT_THAT(engine_->denoise(given, {}), IsOk());
  given.initial_latents = torch::zeros({16, 3, 4});
  EXPECT_THAT(engine_->denoise(given, {}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got [16, 3, 4]")));
  EngineDenoiseRequest caption = denoise_request("tiny", 1);
  caption.positive.tensors["cap_feats"] = torch::zeros({5, 8});
  EXPECT_THAT(engine_->denoise(caption, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"cap_feats\" is a float [5, 8]")));
  EXPECT_THAT(engine_->denoise(denoise_request("nope", 1), {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"nope\"")));
}

TEST_F(EngineTest, StopAcceptingRefusesNewWork) {
  start();
  ASSERT_THAT(engine_->load(request("tiny")), IsOk());
  engine_->stop_accepting();
  const auto unavailable = StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down"));
  EXPECT_THAT(engine_->load(request("tiny")), unavailable);
  EXPECT_THAT(engine_->step("tiny", {}), unavailable);
  EXPECT_THAT(engine_->denoise(denoise_request("tiny", 1), {}), unavailable);
  EXPECT_THAT(engine_->unload("tiny", UnloadOptions{}), unavailable);
  EXPECT_THAT(engine_->acquire_lease("tiny", absl::Seconds(5)), unavailable);
  EXPECT_THAT(engine_->make_room(1, Device::kCpu), unavailable);
  // Reading the state still works, and nothing runs.
  EXPECT_THAT(ids(engine_->list()), ElementsAre("tiny"));
  EXPECT_EQ(engine_->stats().misses, 1);
  EXPECT_TRUE(engine_->wait_idle(absl::Now()));
  EXPECT_GT(engine_->unload_all(absl::Seconds(10)), 0);
  EXPECT_EQ(ram().committed_bytes, 0);
}

TEST_F(EngineTest, CancelAllStopsARunningDenoiseWithinAStep) {
  start();
  ASSERT_THAT(engine_->load(request("tiny")), IsOk());
  Signal first_step, cancelled;
  std::atomic<int> steps{0};
  DenoiseOptions options;
  options.on_step = [&](const StepEvent& e) {
    steps.store(e.step);
    if (e.step == 1) {
      first_step.notify();
      cancelled.wait();
    }
  };
  absl::StatusOr<torch::Tensor> result = absl::UnknownError("not run");
  std::thread worker([&] { result = engine_->denoise(denoise_request("tiny", 1000), options); });
  ASSERT_TRUE(first_step.wait());
  EXPECT_FALSE(engine_->wait_idle(absl::Now()));  // the denoise still runs
  engine_->cancel_all();
  cancelled.notify();
  worker.join();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down")));
  EXPECT_EQ(steps.load(), 1);
  EXPECT_TRUE(engine_->wait_idle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(engine_->list()[0].pins, 0);
  EXPECT_GT(engine_->unload_all(absl::Seconds(10)), 0);
  EXPECT_EQ(ram().committed_bytes, 0);
}

TEST_F(EngineTest, CancelAllStopsARunningLoad) {
  start();
  Signal first_event, cancelled;
  std::atomic<int> events{0};
  LoadWatcher watcher;
  watcher.on_progress = [&](const LoadProgress&) {
    if (events.fetch_add(1) == 0) {
      first_event.notify();
      cancelled.wait();
    }
  };
  absl::StatusOr<ModelInfo> result = absl::UnknownError("not run");
  std::thread worker([&] { result = engine_->load(request("tiny"), watcher); });
  ASSERT_TRUE(first_event.wait());
  engine_->cancel_all();
  cancelled.notify();
  worker.join();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down")));
  EXPECT_EQ(ram().committed_bytes, 0);
  EXPECT_EQ(ram().reserved_bytes, 0);
  EXPECT_THAT(engine_->list(), IsEmpty());
  EXPECT_TRUE(engine_->wait_idle(absl::Now() + absl::Seconds(10)));

  // Work that arrives after cancel_all() is stopped the same way.
  EXPECT_THAT(engine_->load(request("tiny")), StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  EXPECT_EQ(ram().committed_bytes, 0);
}

}  // namespace
}  // namespace diffusiond
