// What serving over gRPC costs: one Z-Image Step through a real daemon on
// loopback against the same Step in-process (same weights, same inputs),
// for the demo size and the mid-size configuration of denoise_step_bench;
// and loopback tensor throughput (a Step whose inputs are received,
// validated and converted, then refused because the model is not loaded).
// Target: gRPC ≤ 5% slower than in-process, plus the tensor transfer.
//
// The models are generated once in the temp folder and removed at exit.
#include <grpcpp/grpcpp.h>
#include <torch/utils.h>

#include <filesystem>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "tools/random_models/z_image_random.h"
#include "diffusiond/v1/denoise_service.grpc.pb.h"
#include "diffusiond/v1/model_service.grpc.pb.h"
#include "server/daemon.h"
#include "server/wire_tensor.h"

namespace diffusiond {
namespace {

struct Fixture {
  std::string dir = (std::filesystem::temp_directory_path() / "diffusiond_grpc_step_bench").string();
  std::unique_ptr<Log> log;
  std::unique_ptr<Daemon> daemon;
  std::shared_ptr<grpc::Channel> channel;

  ~Fixture() {
    daemon.reset();
    std::filesystem::remove_all(dir);
  }

  // Starts the daemon once, with both models on disk.
  absl::Status start() {
    if (daemon != nullptr) return absl::OkStatus();
    for (const auto& [name, config] :
         {std::pair{"small", demo_z_image_config()}, std::pair{"mid", mid_size_z_image_config()}}) {
      const std::string path = dir + "/" + name;
      if (!std::filesystem::exists(path + "/config.json")) {
        if (absl::Status s = write_random_z_image(config, path, 7); !s.ok()) return s;
      }
    }
    DaemonOptions options;
    options.listen = "127.0.0.1:0";
    options.metrics_listen = "127.0.0.1:0";
    options.models_dir = dir;
    options.fp8 = "off";
    options.ram_budget_bytes = int64_t{8} << 30;
    log = std::make_unique<Log>(LogLevel::kWarning);
    absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::start(options, *log);
    if (!d.ok()) return d.status();
    daemon = *std::move(d);
    channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", daemon->grpc_port()),
                                        grpc::InsecureChannelCredentials(), channel_args());
    return absl::OkStatus();
  }

  static grpc::ChannelArguments channel_args() {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    args.SetMaxSendMessageSize(256 << 20);
    return args;
  }
} fixture;

const char* model_name(int64_t arg) { return arg == 0 ? "small" : "mid"; }

// x [1, 16, 1, 64, 64], t [1], cap_feats [1, 128, cap_dim]: a 512x512 image.
NamedTensors step_inputs(int64_t cap_dim) {
  torch::manual_seed(0);
  return {{"x", torch::randn({1, 16, 1, 64, 64})},
          {"t", torch::full({1}, 0.5f)},
          {"cap_feats", torch::randn({1, 128, cap_dim})}};
}

absl::Status prepare(benchmark::State& state, int64_t* cap_dim) {
  if (absl::Status s = fixture.start(); !s.ok()) return s;
  ModelLoadRequest load;
  load.path = load.model_id = model_name(state.range(0));
  absl::StatusOr<ModelInfo> info = fixture.daemon->engine().load(load);
  if (!info.ok()) return info.status();
  *cap_dim = state.range(0) == 0 ? demo_z_image_config().cap_feat_dim : mid_size_z_image_config().cap_feat_dim;
  // One untimed step first: the first forward pays for allocations and
  // page faults that later ones reuse, and would favour whichever runs second.
  return fixture.daemon->engine().step(model_name(state.range(0)), step_inputs(*cap_dim)).status();
}

void BM_StepInProcess(benchmark::State& state) {
  int64_t cap_dim = 0;
  if (absl::Status s = prepare(state, &cap_dim); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  const NamedTensors inputs = step_inputs(cap_dim);
  for (auto _ : state) {
    absl::StatusOr<NamedTensors> out = fixture.daemon->engine().step(model_name(state.range(0)), inputs);
    if (!out.ok()) return state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out->at("out").data_ptr());
  }
  state.SetLabel(model_name(state.range(0)));
}

void BM_StepOverGrpc(benchmark::State& state) {
  int64_t cap_dim = 0;
  if (absl::Status s = prepare(state, &cap_dim); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  auto stub = v1::DenoiseService::NewStub(fixture.channel);
  // The client's conversion is part of what a remote caller pays.
  const NamedTensors inputs = step_inputs(cap_dim);
  for (auto _ : state) {
    v1::StepRequest request;
    request.set_model_id(model_name(state.range(0)));
    for (const auto& [name, tensor] : inputs) {
      v1::NamedTensor* in = request.add_inputs();
      in->set_name(name);
      (void)to_wire(tensor, in->mutable_tensor());
    }
    grpc::ClientContext context;
    v1::StepResponse response;
    const grpc::Status status = stub->Step(&context, request, &response);
    if (!status.ok()) return state.SkipWithError(status.error_message().c_str());
    absl::StatusOr<NamedTensors> out = from_wire(response.outputs());
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(model_name(state.range(0)));
}

void BM_LoopbackTensorUpload(benchmark::State& state) {
  if (absl::Status s = fixture.start(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  auto stub = v1::DenoiseService::NewStub(fixture.channel);
  const int64_t bytes = state.range(0);
  v1::StepRequest request;
  request.set_model_id("not-loaded");
  v1::NamedTensor* in = request.add_inputs();
  in->set_name("x");
  in->mutable_tensor()->set_dtype(v1::DTYPE_FLOAT32);
  in->mutable_tensor()->add_shape(bytes / 4);
  in->mutable_tensor()->mutable_data()->assign(static_cast<size_t>(bytes), '\0');
  for (auto _ : state) {
    grpc::ClientContext context;
    v1::StepResponse response;
    const grpc::Status status = stub->Step(&context, request, &response);
    if (status.error_code() != grpc::StatusCode::NOT_FOUND) return state.SkipWithError(status.error_message().c_str());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

// Wall time throughout: over gRPC the work happens on the daemon's threads.
BENCHMARK(BM_StepInProcess)->Arg(0)->Unit(benchmark::kMillisecond)->MinTime(3)->UseRealTime();
BENCHMARK(BM_StepOverGrpc)->Arg(0)->Unit(benchmark::kMillisecond)->MinTime(3)->UseRealTime();
BENCHMARK(BM_StepInProcess)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(4)->UseRealTime();
BENCHMARK(BM_StepOverGrpc)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(4)->UseRealTime();
BENCHMARK(BM_LoopbackTensorUpload)
    ->Arg(1 << 20)->Arg(16 << 20)->Arg(128 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace diffusiond
