// One FLUX.1 denoise step on the CPU at float32 for a mid-size
// configuration (mid_size_flux_config(): 12 heads x 128, 3 double + 6 single
// blocks, guidance-distilled), as the daemon runs it: the model's flow
// predictor packs a [16, 64, 64] latent (a 512x512 image, 1024 image
// tokens), runs the forward with 512 T5 tokens (the pipeline pads prompts to
// max_sequence_length 512) and unpacks the velocity. FP8 storage off and on,
// with the peak RSS the step adds. The random-weight model is generated
// once in the temp folder (bf16 diffusers format, ~0.98 GB) and removed at
// exit.
#include <torch/utils.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "core/engine/model_admission.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/flux/flux_model.h"
#include "core/models/model_loader.h"
#include "kernels/torch_compat.h"
#include "tools/random_models/demo_models.h"
#include "tools/random_models/flux_random.h"

namespace diffusiond {
namespace {

constexpr int64_t kTextTokens = 512;

struct GeneratedModel {
  std::string dir = (std::filesystem::temp_directory_path() / "diffusiond_flux_step_bench_model").string();
  ~GeneratedModel() { std::filesystem::remove_all(dir); }
} generated;

// Arguments: storage (0 float32, 1 FP8 e4m3fn), then threads (libtorch's
// pool and the BLAS's, as the daemon's --threads sets them):
// BM_FluxStep/0/2 is float32 storage on 2 threads.
void BM_FluxStep(benchmark::State& state) {
  tune_allocator_for_serving();
  compat::set_compute_threads(static_cast<int>(state.range(1)));
  if (!std::filesystem::exists(generated.dir + "/config.json")) {
    if (!write_random_flux(mid_size_flux_config(), generated.dir, 7).ok()) {
      state.SkipWithError("cannot write the model");
      return;
    }
  }
  Budget ram(Device::kCpu, int64_t{8} << 30);
  ModelCacheOptions co;
  co.ram_budget = &ram;
  auto cache = std::move(*ModelCache::create(co));
  auto ckpt = std::move(*Checkpoint::open(generated.dir));
  ModelLoadOptions options;
  if (state.range(0) == 1) options.fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<Pin> pin = cache->get_or_load("m", [&] { return load_model(*ckpt, options, *cache); });
  if (!pin.ok()) {
    state.SkipWithError(std::string(pin.status().message()).c_str());
    return;
  }
  const auto& model = dynamic_cast<const FluxModel&>(pin->as<LoadedModel>()->model());
  const Conditioning c = random_conditioning(model.conditioning_inputs(), kTextTokens, 1);
  absl::StatusOr<FlowPredictor> predict = model.flow_predictor(c, nullptr);
  if (!predict.ok()) {
    state.SkipWithError(std::string(predict.status().message()).c_str());
    return;
  }
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({16, 64, 64});
  int64_t peak = 0;
  for (auto _ : state) {
    state.PauseTiming();
    (void)reset_peak_rss();
    const int64_t before = read_process_memory()->rss_bytes;
    state.ResumeTiming();
    absl::StatusOr<FlowPrediction> out = (*predict)(x, 0.5f, false);
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
    state.PauseTiming();
    peak = std::max(peak, read_process_memory()->peak_rss_bytes - before);
    state.ResumeTiming();
  }
  state.counters["weights_MiB"] = static_cast<double>(model.weights().nbytes()) / (1 << 20);
  state.counters["step_peak_rss_MiB"] = static_cast<double>(peak) / (1 << 20);
  state.SetLabel(state.range(0) == 1 ? "fp8 e4m3fn storage" : "float32 storage");
}
BENCHMARK(BM_FluxStep)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace diffusiond
