// The commands against an in-process fake daemon on 127.0.0.1:0: what each
// sends, what it prints, and how daemon errors, deadlines and Ctrl-C come
// back.
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "clients/diffusionctl/channel.h"
#include "clients/diffusionctl/commands.h"
#include "clients/diffusionctl/tensor_file.h"
#include "core/util/bytes.h"
#include "core/util/mutex.h"
#include "diffusiond/v1/cache_service.grpc.pb.h"
#include "diffusiond/v1/denoise_service.grpc.pb.h"
#include "diffusiond/v1/model_service.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond::ctl {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

v1::Tensor f32(std::vector<int64_t> shape, float fill) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_FLOAT32);
  int64_t n = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    n *= d;
  }
  const std::vector<float> values(n, fill);
  t.set_data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return t;
}

v1::ModelInfo info(const std::string& id) {
  v1::ModelInfo m;
  m.set_model_id(id);
  m.set_architecture("z-image");
  m.set_compute_dtype("float32");
  m.set_tensors(10);
  m.set_fp8_tensors(6);
  m.set_ram_bytes(3 * kGiB);
  return m;
}

// What the fakes were asked, for the tests to check. Thread-safe.
template <typename T>
class Last {
 public:
  void set(const T& value) {
    MutexLock lock(&mu_);
    value_ = value;
  }
  T get() const {
    MutexLock lock(&mu_);
    return value_;
  }

 private:
  mutable Mutex mu_;
  T value_ ABSL_GUARDED_BY(mu_);
};

// The call's diffusiond-model header; empty without one.
std::string route_of(const grpc::ServerContext* context) {
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find(kRoutingHeader);
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

class FakeModelService final : public v1::ModelService::Service {
 public:
  grpc::Status LoadModel(grpc::ServerContext* context, const v1::LoadModelRequest* request,
                         grpc::ServerWriter<v1::LoadModelEvent>* writer) override {
    route.set(route_of(context));
    load.set(*request);
    if (request->path() == "missing") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "models/missing: no such file or folder");
    }
    for (int i = 1; i <= 4; ++i) {
      v1::LoadModelEvent event;
      v1::LoadProgress* p = event.mutable_progress();
      p->set_bytes_read(i * kGiB / 2);
      p->set_total_bytes(2 * kGiB);
      p->set_tensors_done(i * 25);
      p->set_total_tensors(100);
      writer->Write(event);
    }
    v1::LoadModelEvent done;
    *done.mutable_loaded() =
        info(request->model_id().empty() ? request->path() : request->model_id());
    writer->Write(done);
    return grpc::Status::OK;
  }
  grpc::Status UnloadModel(grpc::ServerContext* context, const v1::UnloadModelRequest* request,
                           v1::UnloadModelResponse* response) override {
    route.set(route_of(context));
    unload.set(*request);
    if (request->model_id() != "z") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "model \"" + request->model_id() + "\" is not loaded");
    }
    response->set_ram_bytes_freed(3 * kGiB);
    return grpc::Status::OK;
  }
  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest*,
                          v1::ListModelsResponse* response) override {
    route.set(route_of(context));
    *response->add_models() = info("z");
    *response->add_models() = info("tiny");
    return grpc::Status::OK;
  }
  grpc::Status AcquireLease(grpc::ServerContext* context, const v1::AcquireLeaseRequest* request,
                            v1::AcquireLeaseResponse* response) override {
    route.set(route_of(context));
    lease.set(*request);
    response->set_lease_id(42);
    return grpc::Status::OK;
  }
  grpc::Status ReleaseLease(grpc::ServerContext* context, const v1::ReleaseLeaseRequest* request,
                            v1::ReleaseLeaseResponse*) override {
    route.set(route_of(context));
    if (request->lease_id() != 42) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no lease 7");
    return grpc::Status::OK;
  }

  Last<v1::LoadModelRequest> load;
  Last<v1::UnloadModelRequest> unload;
  Last<v1::AcquireLeaseRequest> lease;
  Last<std::string> route;  // the last call's diffusiond-model header
};

class FakeCacheService final : public v1::CacheService::Service {
 public:
  grpc::Status GetStats(grpc::ServerContext*, const v1::GetStatsRequest*,
                        v1::GetStatsResponse* response) override {
    v1::DeviceBudget* cpu = response->add_budgets();
    cpu->set_device("cpu");
    cpu->set_capacity_bytes(12 * kGiB);
    *response->add_models() = info("z");
    response->set_hits(5);
    response->set_evictions(2);
    return grpc::Status::OK;
  }
  grpc::Status MakeRoom(grpc::ServerContext*, const v1::MakeRoomRequest* request,
                        v1::MakeRoomResponse* response) override {
    make_room.set(*request);
    if (request->bytes() > 10 * kGiB) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "needed 20 GiB, available 9 GiB, evictable 3 GiB");
    }
    response->set_available_bytes(request->bytes());
    response->add_evicted_model_ids("a");
    response->add_evicted_model_ids("b");
    return grpc::Status::OK;
  }

  Last<v1::MakeRoomRequest> make_room;
};

class FakeDenoiseService final : public v1::DenoiseService::Service {
 public:
  FakeDenoiseService() : released_(release_.get_future().share()) {}

  // Echoes each input back as "out_<name>".
  grpc::Status Step(grpc::ServerContext* context, const v1::StepRequest* request, v1::StepResponse* response) override {
    route.set(route_of(context));
    step.set(*request);
    for (const v1::NamedTensor& in : request->inputs()) {
      v1::NamedTensor* out = response->add_outputs();
      out->set_name("out_" + in.name());
      *out->mutable_tensor() = in.tensor();
    }
    return grpc::Status::OK;
  }

  // Model "hang" sends one step, tells step_sent, and waits for release();
  // any other sends every step and latents of the requested shape, filled
  // with 0.5.
  grpc::Status Denoise(grpc::ServerContext*, const v1::DenoiseRequest* request,
                       grpc::ServerWriter<v1::DenoiseEvent>* writer) override {
    denoise.set(*request);
    v1::DenoiseEvent event;
    if (request->model_id() == "hang") {
      event.mutable_step()->set_step(1);
      event.mutable_step()->set_steps(request->steps());
      writer->Write(event);
      step_sent.set_value();
      released_.wait();
      return grpc::Status::OK;
    }
    for (int i = 1; i <= request->steps(); ++i) {
      v1::DenoiseStep* s = event.mutable_step();
      s->set_step(i);
      s->set_steps(request->steps());
      s->set_sigma(1.0f - static_cast<float>(i - 1) / static_cast<float>(request->steps()));
      s->set_step_seconds(0.25);
      // As the daemon: with a second expert, each step names its model (here
      // the second runs the last half).
      if (!request->expert_2().empty()) {
        s->set_model_id(2 * i > request->steps() ? request->expert_2() : request->model_id());
      }
      writer->Write(event);
    }
    std::vector<int64_t> shape(request->latent_shape().begin(), request->latent_shape().end());
    if (request->has_initial_latents()) {
      shape.assign(request->initial_latents().shape().begin(),
                   request->initial_latents().shape().end());
    }
    *event.mutable_latents() = f32(shape, 0.5f);
    writer->Write(event);
    return grpc::Status::OK;
  }

  // Lets a waiting "hang" call return. Idempotent.
  void release() {
    std::call_once(released_once_, [this] { release_.set_value(); });
  }

  Last<v1::StepRequest> step;
  Last<std::string> route;  // Step's diffusiond-model header
  Last<v1::DenoiseRequest> denoise;
  std::promise<void> step_sent;

 private:
  std::promise<void> release_;
  std::shared_future<void> released_;
  std::once_flag released_once_;
};

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&models_);
    builder.RegisterService(&cache_);
    builder.RegisterService(&denoise_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    server_->GetHealthCheckService()->SetServingStatus("diffusiond.v1.DenoiseService", false);

    GlobalOptions global;
    global.address = "127.0.0.1:" + std::to_string(port);
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = open_channel(global);
    ASSERT_THAT(channel, IsOk());
    env_.channel = *channel;
    env_.address = global.address;
    env_.out = &out_;
    env_.err = &err_;
    env_.canceller = &canceller_;
  }

  void TearDown() override {
    denoise_.release();
    server_->Shutdown();
  }

  FakeModelService models_;
  FakeCacheService cache_;
  FakeDenoiseService denoise_;
  std::unique_ptr<grpc::Server> server_;
  std::ostringstream out_;
  std::ostringstream err_;
  CallCanceller canceller_;
  CommandEnv env_;
  TempDir dir_;
};

TEST_F(CommandsTest, LoadSendsOptionsShowsProgressAndPrintsTheModel) {
  LoadOptions o;
  o.path = "z-image/transformer";
  o.model_id = "z";
  o.fp8 = v1::FP8_MODE_E5M2;
  o.compute_dtype = "bfloat16";
  ASSERT_THAT(run_command(env_, o), IsOk());
  const v1::LoadModelRequest sent = models_.load.get();
  EXPECT_EQ(sent.path(), "z-image/transformer");
  EXPECT_EQ(sent.model_id(), "z");
  EXPECT_EQ(sent.fp8(), v1::FP8_MODE_E5M2);
  EXPECT_EQ(sent.compute_dtype(), "bfloat16");
  EXPECT_EQ(err_.str(),
            "loading  25%  512.00 MiB / 2.00 GiB  25/100 tensors\n"
            "loading  50%  1.00 GiB / 2.00 GiB  50/100 tensors\n"
            "loading  75%  1.50 GiB / 2.00 GiB  75/100 tensors\n"
            "loading 100%  2.00 GiB / 2.00 GiB  100/100 tensors\n");
  EXPECT_THAT(out_.str(),
              AllOf(HasSubstr("model_id       z\n"), HasSubstr("tensors        10 (6 fp8)\n")));
}

TEST_F(CommandsTest, LoadOnATerminalRedrawsAndJsonPrintsTheModelInfo) {
  env_.terminal = true;
  env_.json = true;
  LoadOptions o;
  o.path = "m";
  ASSERT_THAT(run_command(env_, o), IsOk());
  EXPECT_THAT(err_.str(),
              AllOf(HasSubstr("\rloading ["), HasSubstr("100%"), ::testing::EndsWith("\n")));
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["model_id"], "m");
  EXPECT_EQ(json["fp8_tensors"], "6");
}

TEST_F(CommandsTest, DaemonErrorsKeepCodeAndMessage) {
  LoadOptions o;
  o.path = "missing";
  EXPECT_THAT(run_command(env_, o),
              StatusIs(absl::StatusCode::kNotFound, "models/missing: no such file or folder"));
  EXPECT_EQ(out_.str(), "");
  EXPECT_THAT(run_command(env_, UnloadOptions{"x", false}),
              StatusIs(absl::StatusCode::kNotFound, "model \"x\" is not loaded"));
  EXPECT_THAT(run_command(env_, MakeRoomOptions{20 * kGiB, "cpu"}),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("evictable 3 GiB")));
  EXPECT_THAT(run_command(env_, ReleaseOptions{7}),
              StatusIs(absl::StatusCode::kNotFound, "no lease 7"));
}

TEST_F(CommandsTest, Unload) {
  ASSERT_THAT(run_command(env_, UnloadOptions{"z", true}), IsOk());
  EXPECT_TRUE(models_.unload.get().wait());
  EXPECT_EQ(out_.str(), "unloaded z: freed 3.00 GiB RAM\n");
}

TEST_F(CommandsTest, ListAndStats) {
  ASSERT_THAT(run_command(env_, ListOptions{}), IsOk());
  EXPECT_EQ(out_.str(),
            "ID    ARCHITECTURE  DTYPE    FP8/TENSORS  RAM       PINS  IDLE\n"
            "z     z-image       float32  6/10         3.00 GiB  0     0s\n"
            "tiny  z-image       float32  6/10         3.00 GiB  0     0s\n");
  out_.str("");
  ASSERT_THAT(run_command(env_, StatsOptions{}), IsOk());
  EXPECT_THAT(out_.str(), AllOf(HasSubstr("cpu     12.00 GiB"), HasSubstr("models (1):"),
                                HasSubstr("5     0       2")));
  out_.str("");
  env_.json = true;
  ASSERT_THAT(run_command(env_, ListOptions{}), IsOk());
  EXPECT_EQ(nlohmann::json::parse(out_.str())["models"].size(), 2u);
}

TEST_F(CommandsTest, MakeRoomLeaseRelease) {
  ASSERT_THAT(run_command(env_, MakeRoomOptions{4 * kGiB, "cuda"}), IsOk());
  EXPECT_EQ(cache_.make_room.get().device(), "cuda");
  EXPECT_EQ(out_.str(), "available: 4.00 GiB on cuda\nevicted: a, b\n");

  out_.str("");
  ASSERT_THAT(run_command(env_, LeaseOptions{"z", absl::Minutes(10)}), IsOk());
  EXPECT_EQ(models_.lease.get().model_id(), "z");
  EXPECT_EQ(models_.lease.get().ttl_seconds(), 600.0);
  EXPECT_EQ(out_.str(), "42\n");

  out_.str("");
  ASSERT_THAT(run_command(env_, ReleaseOptions{42}), IsOk());
  EXPECT_EQ(out_.str(), "released lease 42\n");
}

// A proxy hashes on the header (docs/scaling.md): each call about a model names it, others name none.
TEST_F(CommandsTest, ModelScopedCallsCarryTheRoutingHeader) {
  LoadOptions load;
  load.path = "z-image/transformer";
  ASSERT_THAT(run_command(env_, load), IsOk());
  EXPECT_EQ(models_.route.get(), "z-image/transformer");  // no id: the path keys the model
  load.model_id = "z";
  ASSERT_THAT(run_command(env_, load), IsOk());
  EXPECT_EQ(models_.route.get(), "z");
  ASSERT_THAT(run_command(env_, ListOptions{}), IsOk());
  EXPECT_EQ(models_.route.get(), "");
  ASSERT_THAT(run_command(env_, LeaseOptions{"z", absl::Minutes(1)}), IsOk());
  EXPECT_EQ(models_.route.get(), "z");
  ASSERT_THAT(run_command(env_, ReleaseOptions{42, "z"}), IsOk());
  EXPECT_EQ(models_.route.get(), "z");
  ASSERT_THAT(run_command(env_, UnloadOptions{"z", true}), IsOk());
  EXPECT_EQ(models_.route.get(), "z");
  // Printable ASCII only, percent-encoded as the Python client does.
  ASSERT_THAT(run_command(env_, UnloadOptions{"z image/é,v1", true}), Not(IsOk()));
  EXPECT_EQ(models_.route.get(), "z%20image/%C3%A9,v1");

  NamedTensors inputs;
  v1::NamedTensor* x = inputs.Add();
  x->set_name("x");
  *x->mutable_tensor() = f32({1}, 1.0f);
  const std::string in = dir_.path("route-in.safetensors");
  ASSERT_THAT(write_tensor_file(in, inputs), IsOk());
  ASSERT_THAT(run_command(env_, StepOptions{"z", in, dir_.path("route-out.safetensors")}), IsOk());
  EXPECT_EQ(denoise_.route.get(), "z");
}

TEST_F(CommandsTest, HealthSucceedsOnlyWhenServing) {
  ASSERT_THAT(run_command(env_, HealthOptions{""}), IsOk());
  EXPECT_EQ(out_.str(), "SERVING\n");
  out_.str("");
  EXPECT_THAT(run_command(env_, HealthOptions{"diffusiond.v1.DenoiseService"}),
              StatusIs(absl::StatusCode::kUnavailable,
                       "service \"diffusiond.v1.DenoiseService\" is NOT_SERVING"));
  EXPECT_EQ(out_.str(), "NOT_SERVING\n");
  EXPECT_THAT(run_command(env_, HealthOptions{"no.such.Service"}),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST_F(CommandsTest, StepSendsEveryTensorAndWritesTheOutputs) {
  NamedTensors inputs;
  v1::NamedTensor* x = inputs.Add();
  x->set_name("x");
  *x->mutable_tensor() = f32({1, 4, 1, 2, 2}, 1.5f);
  v1::NamedTensor* t = inputs.Add();
  t->set_name("t");
  *t->mutable_tensor() = f32({1}, 0.25f);
  const std::string in = dir_.path("in.safetensors");
  ASSERT_THAT(write_tensor_file(in, inputs), IsOk());

  const std::string out = dir_.path("out.safetensors");
  ASSERT_THAT(run_command(env_, StepOptions{"z", in, out}), IsOk());
  const v1::StepRequest sent = denoise_.step.get();
  EXPECT_EQ(sent.model_id(), "z");
  ASSERT_EQ(sent.inputs_size(), 2);
  EXPECT_EQ(sent.inputs(0).SerializeAsString(), inputs.Get(0).SerializeAsString());
  EXPECT_EQ(sent.inputs(1).SerializeAsString(), inputs.Get(1).SerializeAsString());

  absl::StatusOr<NamedTensors> written = read_tensor_file(out);
  ASSERT_THAT(written, IsOk());
  ASSERT_EQ(written->size(), 2);
  EXPECT_EQ(written->Get(0).name(), "out_x");
  EXPECT_EQ(written->Get(0).tensor().data(), x->tensor().data());
  EXPECT_EQ(out_.str(),
            "wrote " + out + ":\n  out_x float32 [1, 4, 1, 2, 2]\n  out_t float32 [1]\n");
}

TEST_F(CommandsTest, DenoiseFromNoiseShowsStepsAndWritesLatents) {
  NamedTensors caption;
  v1::NamedTensor* c = caption.Add();
  c->set_name("cap_feats");
  *c->mutable_tensor() = f32({3, 8}, 1.0f);
  v1::NamedTensor* other = caption.Add();
  other->set_name("unrelated");
  *other->mutable_tensor() = f32({1}, 0.0f);
  const std::string caption_path = dir_.path("cap.safetensors");
  ASSERT_THAT(write_tensor_file(caption_path, caption), IsOk());

  DenoiseOptions o;
  o.model_id = "z";
  o.conditioning_path = caption_path;
  o.scalars["guidance"] = 3.5;
  o.latent_shape = {4, 2, 2};
  o.seed = 7;
  o.steps = 2;
  o.guidance_scale = 5.0;
  o.shift = 3.0;
  o.out_path = dir_.path("latents.safetensors");
  env_.json = true;
  ASSERT_THAT(run_command(env_, o), IsOk());

  const v1::DenoiseRequest sent = denoise_.denoise.get();
  EXPECT_THAT(sent.latent_shape(), ElementsAre(4, 2, 2));
  EXPECT_EQ(sent.seed(), 7u);
  EXPECT_EQ(sent.steps(), 2);
  EXPECT_EQ(sent.guidance_scale(), 5.0);
  EXPECT_EQ(sent.shift(), 3.0);
  ASSERT_EQ(sent.conditioning().tensors_size(), 2);
  EXPECT_EQ(sent.conditioning().tensors(0).name(), "cap_feats");
  EXPECT_EQ(sent.conditioning().tensors(0).tensor().SerializeAsString(), c->tensor().SerializeAsString());
  EXPECT_EQ(sent.conditioning().scalars().at("guidance"), 3.5);
  EXPECT_FALSE(sent.has_negative());
  EXPECT_FALSE(sent.has_initial_latents());
  EXPECT_EQ(err_.str(), "step 1/2 sigma 1.000 0.25 s\nstep 2/2 sigma 0.500 0.25 s\n");

  absl::StatusOr<NamedTensors> latents = read_tensor_file(o.out_path);
  ASSERT_THAT(latents, IsOk());
  ASSERT_EQ(latents->size(), 1);
  EXPECT_EQ(latents->Get(0).name(), "latents");
  EXPECT_EQ(latents->Get(0).tensor().SerializeAsString(), f32({4, 2, 2}, 0.5f).SerializeAsString());
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["path"], o.out_path);
  EXPECT_EQ(json["tensors"][0]["name"], "latents");
  EXPECT_EQ(json["tensors"][0]["shape"], nlohmann::json::array({4, 2, 2}));
}

TEST_F(CommandsTest, DenoiseFromLatentsWithNegativeAndSigmas) {
  NamedTensors one;
  v1::NamedTensor* t = one.Add();
  t->set_name("anything");
  *t->mutable_tensor() = f32({2, 8}, 2.0f);
  const std::string features = dir_.path("features.safetensors");
  ASSERT_THAT(write_tensor_file(features, one), IsOk());
  *t->mutable_tensor() = f32({4, 3, 3}, -1.0f);
  const std::string init = dir_.path("init.safetensors");
  ASSERT_THAT(write_tensor_file(init, one), IsOk());

  DenoiseOptions o;
  o.model_id = "z";
  o.conditioning_path = features;
  o.negative_path = features;
  o.latents_path = init;
  o.sigmas = {1.0f, 0.5f};
  o.steps = 2;
  o.out_path = dir_.path("out.safetensors");
  ASSERT_THAT(run_command(env_, o), IsOk());
  const v1::DenoiseRequest sent = denoise_.denoise.get();
  EXPECT_THAT(sent.initial_latents().shape(), ElementsAre(4, 3, 3));
  EXPECT_THAT(sent.negative().tensors(0).tensor().shape(), ElementsAre(2, 8));
  EXPECT_THAT(sent.sigmas(), ElementsAre(1.0f, 0.5f));
  EXPECT_TRUE(sent.latent_shape().empty());
  EXPECT_EQ(out_.str(), "wrote " + o.out_path + ":\n  latents float32 [4, 3, 3]\n");
}

TEST_F(CommandsTest, DenoiseWithTwoExpertsSendsThemAndNamesEachStepsModel) {
  DenoiseOptions o;
  o.model_id = "high";
  o.latent_shape = {4, 2, 2, 2};
  o.steps = 4;
  o.guidance_scale = 4.0;
  o.expert_2 = "low";
  o.boundary_ratio = 0.875;
  o.guidance_scale_2 = 3.0;
  o.out_path = dir_.path("experts.safetensors");
  ASSERT_THAT(run_command(env_, o), IsOk());
  const v1::DenoiseRequest sent = denoise_.denoise.get();
  EXPECT_EQ(sent.model_id(), "high");
  EXPECT_EQ(sent.expert_2(), "low");
  EXPECT_EQ(sent.boundary_ratio(), 0.875);
  EXPECT_EQ(sent.guidance_scale_2(), 3.0);
  EXPECT_THAT(sent.latent_shape(), ElementsAre(4, 2, 2, 2));
  EXPECT_EQ(err_.str(),
            "step 1/4 sigma 1.000 0.25 s model high\n"
            "step 2/4 sigma 0.750 0.25 s model high\n"
            "step 3/4 sigma 0.500 0.25 s model low\n"
            "step 4/4 sigma 0.250 0.25 s model low\n");
}

TEST_F(CommandsTest, DenoiseFileErrorsComeBeforeAnyCall) {
  DenoiseOptions o;
  o.model_id = "z";
  o.conditioning_path = dir_.path("absent.safetensors");
  o.latent_shape = {1};
  o.out_path = dir_.path("out.safetensors");
  EXPECT_THAT(run_command(env_, o),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.safetensors")));
  EXPECT_EQ(denoise_.denoise.get().model_id(), "");
}

TEST_F(CommandsTest, CancelStopsARunningDenoise) {
  const std::string caption = dir_.path("cap.safetensors");
  NamedTensors one;
  one.Add()->set_name("c");
  *one.Mutable(0)->mutable_tensor() = f32({1, 8}, 1.0f);
  ASSERT_THAT(write_tensor_file(caption, one), IsOk());
  DenoiseOptions o;
  o.model_id = "hang";
  o.conditioning_path = caption;
  o.latent_shape = {4, 2, 2};
  o.steps = 8;
  o.out_path = dir_.path("out.safetensors");

  std::future<void> step_sent = denoise_.step_sent.get_future();
  absl::Status result;
  std::thread call([&] { result = run_command(env_, o); });
  step_sent.wait();
  canceller_.cancel();
  call.join();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled,
                               AllOf(HasSubstr("denoise cancelled after step"), HasSubstr("/8"),
                                     HasSubstr("Ctrl-C"))));
  EXPECT_THAT(out_.str(), Not(HasSubstr("wrote")));
}

TEST_F(CommandsTest, CancelBeforeTheCallCancelsItAsItStarts) {
  canceller_.cancel();
  EXPECT_THAT(run_command(env_, ListOptions{}),
              StatusIs(absl::StatusCode::kCancelled, "cancelled by Ctrl-C"));
}

TEST_F(CommandsTest, TimeoutBecomesTheDeadline) {
  env_.timeout = absl::Milliseconds(20);
  DenoiseOptions o;
  o.model_id = "hang";
  const std::string caption = dir_.path("cap.safetensors");
  NamedTensors one;
  one.Add()->set_name("c");
  *one.Mutable(0)->mutable_tensor() = f32({1}, 1.0f);
  ASSERT_THAT(write_tensor_file(caption, one), IsOk());
  o.conditioning_path = caption;
  o.latent_shape = {1};
  o.out_path = dir_.path("out.safetensors");
  EXPECT_THAT(run_command(env_, o),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("(--timeout 20ms)")));
}

TEST(FromGrpc, NamesTheAddressWhenTheDaemonIsUnreachable) {
  CommandEnv env;
  env.address = "daemon:50051";
  EXPECT_THAT(
      internal::from_grpc(env, grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused")),
      StatusIs(absl::StatusCode::kUnavailable, "daemon:50051: connection refused"));
  EXPECT_THAT(internal::from_grpc(env, grpc::Status(grpc::StatusCode::ABORTED, "x")),
              StatusIs(absl::StatusCode::kAborted, "x"));
  EXPECT_THAT(internal::from_grpc(env, grpc::Status::OK), IsOk());
}

}  // namespace
}  // namespace diffusiond::ctl
