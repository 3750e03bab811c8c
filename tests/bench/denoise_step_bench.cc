// One denoise step on the CPU at float32, for the mid-size model of every
// architecture with a demo model (write_mid_size_model: Z-Image dim 1536,
// 8 + 2 layers; FLUX.1 12 heads x 128, 3 double + 6 single blocks;
// Qwen-Image 12 heads x 128, 8 blocks; Krea 2 12 heads x 128 over 3 KV
// heads, 8 blocks; Wan 12 heads x 128, 8 layers; Cosmos, Anima's DiT, at
// Anima's real width, 16 heads x 128, 8 of its 28 blocks, with the 512
// conditioner rows Anima feeds it), as the daemon runs it: the
// model's own flow predictor over a [16, 64, 64] latent (a 512x512 image,
// 1024 image tokens; for Wan one latent frame, [16, 1, 64, 64]:
// demo_latent_shape) and random conditioning of the text length its
// pipeline feeds it, FP8 storage off and on, with the peak RSS the step
// adds. Each model is generated once in the temp folder (bf16 diffusers
// format, ~0.5-1.4 GB) and removed at exit.
//
// Names: BM_Step/<architecture>/<storage>/<threads>; storage 0 is float32,
// 1 FP8 e4m3fn; threads set libtorch's and the BLAS's pools as the
// daemon's --threads does. BM_Step/flux/0/1 is FLUX at float32 storage on
// one thread.
#include <torch/utils.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "core/engine/model_admission.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/diffusion_model.h"
#include "core/models/model_loader.h"
#include "core/util/remove_tree.h"
#include "kernels/torch_compat.h"
#include "tools/random_models/demo_models.h"

namespace diffusiond {
namespace {

// The generated models, removed at exit: folder and text length by architecture.
struct GeneratedModels {
  std::map<std::string, std::pair<std::string, int64_t>> by_arch;
  ~GeneratedModels() {
    for (const auto& [arch, model] : by_arch) remove_tree(model.first);
  }
} generated;

void BM_Step(benchmark::State& state, const std::string& arch) {
  tune_allocator_for_serving();
  compat::set_compute_threads(static_cast<int>(state.range(1)));
  if (generated.by_arch.count(arch) == 0) {
    const std::string dir = (std::filesystem::temp_directory_path() / ("diffusiond_step_bench_" + arch)).string();
    absl::StatusOr<int64_t> tokens = write_mid_size_model(arch, dir, 7);
    if (!tokens.ok()) {
      state.SkipWithError(std::string(tokens.status().message()).c_str());
      return;
    }
    generated.by_arch[arch] = {dir, *tokens};
  }
  const auto& [dir, tokens] = generated.by_arch.at(arch);
  Budget ram(Device::kCpu, int64_t{8} << 30);
  ModelCacheOptions co;
  co.ram_budget = &ram;
  auto cache = std::move(*ModelCache::create(co));
  auto ckpt = std::move(*Checkpoint::open(dir));
  ModelLoadOptions options;
  // Storage: 0 widened to float32, 1 FP8 layer weights, 2 the bf16 source
  // kept narrow (--narrow_weights); compute is float32 in all three.
  if (state.range(0) == 1) options.fp8.format = Fp8Format::kE4M3Fn;
  options.keep_narrow = state.range(0) == 2;
  absl::StatusOr<Pin> pin = cache->get_or_load("m", [&] { return load_model(*ckpt, options, *cache); });
  if (!pin.ok()) {
    state.SkipWithError(std::string(pin.status().message()).c_str());
    return;
  }
  const auto& model = dynamic_cast<const DiffusionModel&>(pin->as<LoadedModel>()->model());
  const Conditioning c = random_conditioning(model.conditioning_inputs(), tokens, 1);
  absl::StatusOr<FlowPredictor> predict = model.flow_predictor(c, nullptr);
  if (!predict.ok()) {
    state.SkipWithError(std::string(predict.status().message()).c_str());
    return;
  }
  torch::manual_seed(0);
  // One frame for a video model, so that every architecture sees 1024 image tokens.
  const torch::Tensor x = torch::randn(demo_latent_shape(model.latent_layout(), 64, 1));
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
  static const char* const kStorage[] = {"float32 storage", "fp8 e4m3fn storage", "bf16 storage (narrow)"};
  state.SetLabel(kStorage[state.range(0)]);
}

const bool registered = [] {
  for (const std::string& arch : demo_architectures()) {
    benchmark::RegisterBenchmark(("BM_Step/" + arch).c_str(), BM_Step, arch)
        ->ArgsProduct({{0, 1, 2}, {1, 2}})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
  return true;
}();

}  // namespace
}  // namespace diffusiond
