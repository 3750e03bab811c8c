// What LoRA adapters cost a denoise step, on the mid-size FLUX.1 of
// denoise_step_bench (12 heads x 128, 3 double + 6 single blocks, a
// [16, 64, 64] latent: 1024 image tokens), at float32 compute as that
// bench runs it. Each adapter is rank 16 on every linear of every block
// (attention, MLP, modulation): a full LoRA as trainers write them.
//
// Built into denoise_step_bench. Names:
// - BM_AdapterStep/flux/<adapters>/<storage>/<threads>: one step with 0,
//   1 or 3 adapters attached beside the linears (AdapterSet, the engine's
//   way); storage 0 float32, 1 FP8 e4m3fn.
// - BM_AdapterMerge/flux/<adapters>/<storage>/<threads>: what the other way
//   costs per request before its first step: W' = W + Σ s·B·A formed at the
//   compute dtype for every targeted weight (a copy, then addmm), the patched
//   copies' bytes in the counter merged_MiB (activations a request would
//   hold for its whole denoise).
// With a step's time T, the sidecar's overhead per adapter is
// (T_n - T_0) / (n · T_0); merging pays BM_AdapterMerge once per request,
// plus the copies' bytes, and then steps at T_0.
#include <torch/utils.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/engine/adapter_admission.h"
#include "core/engine/model_admission.h"
#include "core/lora/adapter_set.h"
#include "core/lora/lora_file.h"
#include "core/lora/lora_plan.h"
#include "core/memory/allocator.h"
#include "core/models/diffusion_model.h"
#include "core/models/model_loader.h"
#include "core/util/remove_tree.h"
#include "core/util/status_macros.h"
#include "kernels/torch_compat.h"
#include "tools/random_models/lora_random.h"
#include "tools/random_models/demo_models.h"

namespace diffusiond {
namespace {

constexpr int64_t kRank = 16;
constexpr int kMaxAdapters = 3;

// The generated model and adapters, removed at exit.
struct Generated {
  std::string dir;
  int64_t tokens = 0;
  ~Generated() {
    if (!dir.empty()) remove_tree(dir);
  }
} generated;

// The model at `storage` with its conditioning's text length, loaded once
// per storage into its own cache.
struct Loaded {
  std::unique_ptr<Budget> ram;
  std::unique_ptr<ModelCache> cache;
  Pin pin;
  const DiffusionModel* model = nullptr;
  std::vector<std::shared_ptr<const LoraAdapter>> adapters;
};
std::map<int, Loaded> loaded;

// Every block's linear weights of `model` ("….weight", 2-D).
std::vector<std::string> block_linears(const Model& model) {
  std::vector<std::string> out;
  for (const std::string& name : model.weights().names()) {
    const bool in_block = name.rfind("transformer_blocks.", 0) == 0 || name.rfind("single_transformer_blocks.", 0) == 0;
    if (!in_block || name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0) continue;
    absl::StatusOr<torch::Tensor> w = model.weights().at_compute_dtype(name);
    if (w.ok() && w->dim() == 2) out.push_back(name);
  }
  return out;
}

// Writes adapter `k` (PEFT keys) on every block linear of `model` and loads it.
absl::StatusOr<std::shared_ptr<const LoraAdapter>> make_adapter(const Model& model, int k) {
  LoraTensors tensors;
  for (const std::string& name : block_linears(model)) {
    const torch::Tensor w = *model.weights().at_compute_dtype(name);
    const std::string module = name.substr(0, name.size() - 7);
    const LoraTensors m = peft_lora_module(module, w.size(1), w.size(0), kRank, 100 + k);
    tensors.insert(tensors.end(), m.begin(), m.end());
  }
  const std::string path = generated.dir + "/lora_" + std::to_string(k) + ".safetensors";
  DIFFUSIOND_RETURN_IF_ERROR(write_lora_file(path, tensors));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<LoraFile> file, LoraFile::open(path));
  DIFFUSIOND_ASSIGN_OR_RETURN(LoraPlan plan, plan_lora(*file, "flux"));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<LoraAdapter> adapter,
                              LoraAdapter::load(*file, plan, compute_dtype(model)));
  return std::shared_ptr<const LoraAdapter>(std::move(adapter));
}

// The model at `storage` and its adapters, generated and loaded on first use.
absl::StatusOr<Loaded*> model_at(int storage) {
  if (generated.dir.empty()) {
    generated.dir = (std::filesystem::temp_directory_path() / "diffusiond_lora_step_bench").string();
    DIFFUSIOND_ASSIGN_OR_RETURN(generated.tokens, write_mid_size_model("flux", generated.dir + "/flux", 7));
  }
  auto it = loaded.find(storage);
  if (it != loaded.end()) return &it->second;
  Loaded& l = loaded[storage];
  l.ram = std::make_unique<Budget>(Device::kCpu, int64_t{8} << 30);
  ModelCacheOptions co;
  co.ram_budget = l.ram.get();
  DIFFUSIOND_ASSIGN_OR_RETURN(l.cache, ModelCache::create(co));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::open(generated.dir + "/flux"));
  ModelLoadOptions options;
  if (storage == 1) options.fp8.format = Fp8Format::kE4M3Fn;
  DIFFUSIOND_ASSIGN_OR_RETURN(l.pin, l.cache->get_or_load("m", [&] { return load_model(*ckpt, options, *l.cache); }));
  l.model = &dynamic_cast<const DiffusionModel&>(l.pin.as<LoadedModel>()->model());
  for (int k = 0; k < kMaxAdapters; ++k) {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> a, make_adapter(*l.model, k));
    l.adapters.push_back(std::move(a));
  }
  return &l;
}

// The first `n` adapters of `l` as a set, each at weight 1; null for none.
absl::StatusOr<std::unique_ptr<AdapterSet>> set_of(const Loaded& l, int n) {
  if (n == 0) return nullptr;
  std::vector<WeightedLoraAdapter> weighted;
  for (int k = 0; k < n; ++k) weighted.push_back({l.adapters[k], 1.0});
  return AdapterSet::create(*l.model, std::move(weighted));
}

// The benchmarks' arguments: (adapters, storage, threads). Sets the
// threads, and returns the model at that storage with its first `adapters`
// as `*set` (null for none); null, with the benchmark skipped, on error.
const Loaded* set_up(benchmark::State& state, std::unique_ptr<AdapterSet>* set) {
  tune_allocator_for_serving();
  compat::set_compute_threads(static_cast<int>(state.range(2)));
  absl::StatusOr<Loaded*> l = model_at(static_cast<int>(state.range(1)));
  absl::StatusOr<std::unique_ptr<AdapterSet>> made = l.ok() ? set_of(**l, static_cast<int>(state.range(0)))
                                                            : absl::StatusOr<std::unique_ptr<AdapterSet>>(l.status());
  if (!made.ok()) {
    state.SkipWithError(std::string(made.status().message()).c_str());
    return nullptr;
  }
  *set = *std::move(made);
  return *l;
}

void BM_AdapterStep(benchmark::State& state) {
  std::unique_ptr<AdapterSet> set;
  const Loaded* l = set_up(state, &set);
  if (l == nullptr) return;
  const DiffusionModel& model = *l->model;
  const Conditioning c = random_conditioning(model.conditioning_inputs(), generated.tokens, 1);
  absl::StatusOr<FlowPredictor> predict = model.flow_predictor(c, nullptr);
  if (!predict.ok()) {
    state.SkipWithError(std::string(predict.status().message()).c_str());
    return;
  }
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn(demo_latent_shape(model.latent_layout(), 64, 1));
  const auto step = [&] { return run_with_adapters(set.get(), [&] { return (*predict)(x, 0.5f, false); }); };
  (void)step();  // untimed: packs weights, warms the pools
  for (auto _ : state) {
    absl::StatusOr<FlowPrediction> out = step();
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
  }
  state.counters["targeted_linears"] = static_cast<double>(block_linears(model).size());
  state.SetLabel(state.range(1) == 1 ? "fp8 e4m3fn storage" : "float32 storage");
}

void BM_AdapterMerge(benchmark::State& state) {
  std::unique_ptr<AdapterSet> set;
  const Loaded* l = set_up(state, &set);
  if (l == nullptr) return;
  if (set == nullptr) {
    state.SkipWithError("no adapters to merge");
    return;
  }
  const WeightStore& store = l->model->weights();
  int64_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (const std::string& name : set->weights()) {
      // A patched copy at the compute dtype, accumulated there as a
      // request's merge would be (merged_weight's wider sum is for checks).
      absl::StatusOr<torch::Tensor> w = store.at_compute_dtype(name);
      if (!w.ok()) {
        state.SkipWithError(std::string(w.status().message()).c_str());
        return;
      }
      torch::Tensor merged = w->clone();
      for (const AdapterSet::Term& t : *set->terms(name)) merged.addmm_(t.up, t.down, 1, t.scale);
      bytes += merged.nbytes();
    }
  }
  state.counters["merged_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.SetLabel(state.range(1) == 1 ? "fp8 e4m3fn storage" : "float32 storage");
}

BENCHMARK(BM_AdapterStep)
    ->Name("BM_AdapterStep/flux")
    ->ArgsProduct({{0, 1, 3}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_AdapterMerge)
    ->Name("BM_AdapterMerge/flux")
    ->ArgsProduct({{1, 3}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace
}  // namespace diffusiond
