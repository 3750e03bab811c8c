// One Z-Image denoise step on the CPU at float32 for a mid-size
// configuration (dim 1536, 8 layers + 2 refiner layers, 12 heads, a 64x64
// latent = 1024 image tokens, 128 caption tokens), FP8 storage off and on,
// with the peak RSS the step adds. The random-weight model is generated once
// in the temp folder (bf16 diffusers format, ~0.8 GB) and removed at exit.
#include <torch/utils.h>

#include <filesystem>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/engine/model_admission.h"
#include "core/models/model_loader.h"
#include "core/models/z_image/z_image_model.h"
#include "tools/random_models/z_image_random.h"
#include "kernels/torch_compat.h"

namespace diffusiond {
namespace {

struct GeneratedModel {
  std::string dir = (std::filesystem::temp_directory_path() / "diffusiond_step_bench_model").string();
  ~GeneratedModel() { std::filesystem::remove_all(dir); }
} generated;

// Arguments: storage (0 float32, 1 FP8 e4m3fn), then threads (libtorch's
// pool and the BLAS's, as the daemon's --threads sets them):
// BM_ZImageStep/0/2 is float32 storage on 2 threads.
void BM_ZImageStep(benchmark::State& state) {
  tune_allocator_for_serving();
  compat::set_compute_threads(static_cast<int>(state.range(1)));
  if (!std::filesystem::exists(generated.dir + "/config.json")) {
    if (!write_random_z_image(mid_size_z_image_config(), generated.dir, 7).ok()) {
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
  const auto& model = dynamic_cast<const ZImageModel&>(pin->as<LoadedModel>()->model());
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({16, 1, 64, 64}), cap = torch::randn({128, 2560});
  const torch::Tensor t = torch::full({1}, 0.5f);
  int64_t peak = 0;
  for (auto _ : state) {
    state.PauseTiming();
    (void)reset_peak_rss();
    const int64_t before = read_process_memory()->rss_bytes;
    state.ResumeTiming();
    auto out = model.forward({x}, t, {cap});
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
    state.PauseTiming();
    peak = std::max(peak, read_process_memory()->peak_rss_bytes - before);
    state.ResumeTiming();
  }
  state.counters["weights_MiB"] = static_cast<double>(model.weights().nbytes()) / (1 << 20);
  state.counters["step_peak_rss_MiB"] = static_cast<double>(peak) / (1 << 20);
  state.SetLabel(state.range(0) == 1 ? "fp8 e4m3fn storage" : "float32 storage");
}
BENCHMARK(BM_ZImageStep)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace diffusiond
