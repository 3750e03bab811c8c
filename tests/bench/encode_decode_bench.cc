// One Step of the benchmarks' text encoders and image decoder on the CPU at
// bf16 compute, as the daemon's Step runs it (Engine::step: the call's
// activations admitted and taken from its arena): the mid-size text towers
// (write_mid_size_component: Qwen-Image's Qwen2.5-VL-7B at its real width
// with 4 of its 28 layers, Krea 2's Qwen3-VL-4B with 8 of its 36) over a
// 256-token prompt, batch 1, giving the last hidden state after the final
// norm; and Qwen-Image's VAE at its real config decoding one [16, 1, 128,
// 128] latent frame to a 1024x1024 image. Storage is the checkpoint's bf16
// or FP8 e4m3fn, with the peak RSS the step adds. Each model is generated
// once in the temp folder (bf16 transformers or diffusers format; the
// towers about 3 GB each) and removed at exit; one untimed Step first, so
// that packing the weights for oneDNN is not timed.
//
// Names: BM_Encode/<architecture>/<storage>/<threads> and
// BM_Decode/<architecture>/<storage>/<threads>; storage 0 is bf16, 1 FP8
// e4m3fn; threads set libtorch's and the BLAS's pools as the daemon's
// --threads does. BM_Encode/qwen2.5-vl/1/2 is the Qwen2.5-VL tower with FP8
// storage on two threads.
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "core/engine/engine.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/util/remove_tree.h"
#include "kernels/torch_compat.h"
#include "tools/random_models/demo_models.h"

namespace diffusiond {
namespace {

// The prompt's tokens: a 200-odd-token prompt inside Qwen-Image's chat
// template (34 + prompt + 5 rows), within its max_sequence_length of 512.
constexpr int64_t kPromptTokens = 256;
// A 1024x1024 image's latent side (the VAE's factor is 8).
constexpr int64_t kLatentSide = 128;

// The generated models, removed at exit: folder by architecture.
struct GeneratedModels {
  std::map<std::string, std::string> by_arch;
  ~GeneratedModels() {
    for (const auto& [arch, dir] : by_arch) remove_tree(dir);
  }
} generated;

// The Step's inputs: token ids below the vocabulary of every tower here
// (the demo's 512 included), or one latent frame.
NamedTensors step_inputs(const std::string& arch) {
  torch::manual_seed(0);
  if (arch == kQwenImageVaeArchitecture) return {{"latents", torch::randn({1, 16, 1, kLatentSide, kLatentSide})}};
  return {{"input_ids", torch::randint(0, 512, {1, kPromptTokens}, torch::kInt64)}};
}

void BM_Component(benchmark::State& state, const std::string& arch) {
  tune_allocator_for_serving();
  const int threads = static_cast<int>(state.range(1));
  compat::set_compute_threads(threads);
  if (generated.by_arch.count(arch) == 0) {
    const std::string dir = (std::filesystem::temp_directory_path() / ("diffusiond_codec_bench_" + arch)).string();
    const absl::Status written = write_mid_size_component(arch, dir, 7);
    if (!written.ok()) {
      state.SkipWithError(std::string(written.message()).c_str());
      return;
    }
    generated.by_arch[arch] = dir;
  }
  const std::filesystem::path dir(generated.by_arch.at(arch));
  Budget ram(Device::kCpu, int64_t{16} << 30);
  EngineOptions eo;
  eo.models_dir = dir.parent_path().string();
  eo.ram_budget = &ram;
  eo.compute_dtype = ComputeDtype::kBFloat16;
  if (state.range(0) == 1) eo.fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::create(eo);
  if (!engine.ok()) {
    state.SkipWithError(std::string(engine.status().message()).c_str());
    return;
  }
  ModelLoadRequest request;
  request.path = dir.filename().string();
  request.model_id = "m";
  absl::StatusOr<ModelInfo> loaded = (*engine)->load(request);
  if (!loaded.ok()) {
    state.SkipWithError(std::string(loaded.status().message()).c_str());
    return;
  }
  const NamedTensors inputs = step_inputs(arch);
  absl::StatusOr<NamedTensors> out = (*engine)->step("m", inputs);  // untimed: packs the weights
  if (!out.ok()) {
    state.SkipWithError(std::string(out.status().message()).c_str());
    return;
  }
  int64_t peak = 0;
  for (auto _ : state) {
    state.PauseTiming();
    out = NamedTensors();
    (void)reset_peak_rss();
    const int64_t before = read_process_memory()->rss_bytes;
    state.ResumeTiming();
    out = (*engine)->step("m", inputs);
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
    state.PauseTiming();
    peak = std::max(peak, read_process_memory()->peak_rss_bytes - before);
    state.ResumeTiming();
  }
  state.counters["weights_MiB"] = static_cast<double>(loaded->bytes[kCpuIndex]) / (1 << 20);
  state.counters["step_peak_rss_MiB"] = static_cast<double>(peak) / (1 << 20);
  state.SetLabel(state.range(0) == 1 ? "fp8 e4m3fn storage" : "bf16 storage");
}

const bool registered = [] {
  for (const std::string& arch : bench_component_architectures()) {
    const bool decoder = arch == kQwenImageVaeArchitecture;
    benchmark::RegisterBenchmark(((decoder ? "BM_Decode/" : "BM_Encode/") + arch).c_str(), BM_Component, arch)
        ->ArgsProduct({{0, 1}, {1, 2}})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(decoder ? 2 : 3);
  }
  return true;
}();

}  // namespace
}  // namespace diffusiond
