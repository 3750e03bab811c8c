// Child process for call_rss_test: what each kind of engine call adds to
// the process's RSS against what the engine admitted for it. Writes the
// demo pipeline of `family` (tools/random_models: Z-Image with Qwen3, or
// FLUX.1 with CLIP and T5) into a temporary models directory, loads every
// component under a budget that holds them all, warms each kind of call up
// once at the smallest size (oneDNN's kernels and libtorch's pools are the
// process's, not a call's), then runs the table: EncodePrompt, Step,
// Denoise (guided where the family guides), Decode and Generate at growing
// sizes. Runs the daemon's allocator (core/memory/allocator.h).
//
// For each call it prints
//   call=<name> reserved_bytes=<n> peak_growth_bytes=<n> after_growth_bytes=<n>
// reserved: the most the RAM budget held reserved while it ran (its
// high-water mark; nothing else runs), peak growth: VmHWM during the call less
// VmRSS before it, after growth: VmRSS once its outputs are dropped less
// VmRSS before it.
//
// With "concurrent", the Z-Image pipeline instead: learns each component's
// bytes and one Generate's largest reservation under a large budget, then
// runs four Generates at once under a budget for the two largest
// components beside that reservation (less than all three), waiting for
// room (max_room_wait), and prints
//   concurrent capacity_bytes=<n> all_bytes=<n> ok=<generates that
//   succeeded> room_waits=<n> peak_growth_bytes=<n>
// all: the three components and the reservation, which the capacity is not.
// peak growth: VmHWM while they ran less VmRSS before the first load.
//
// With "adapters", the FLUX pipeline instead: three LoRA files (diffusers
// layout, on attention, MLP and output linears of the transformer) are
// written beside it; after one Generate loads every component, 20
// Generates cycle through the adapters (one, another, two stacked, none),
// and it prints
//   adapters requests=<n> base_loads=<n> adapter_loads=<n> capacity_bytes=<n>
//   peak_growth_bytes=<n> after_growth_bytes=<n> committed_bytes=<n> cache_loads=<n>
// loads: the Generates' load events for models and for adapters (a
// component readied from the cache is not one); cache loads: the engine's
// cache misses, adapters and models alike;
// committed: what the budget held before the 20 (the components); peak
// growth: VmHWM during the 20 less VmRSS before them (the components and the
// first Generate's state already resident), after: VmRSS after them less
// before.
//
// Usage: call_rss_child z-image|flux [concurrent|adapters]
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/pipeline/generate.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/prompt_encoding.h"
#include "core/util/remove_tree.h"
#include "tests/testing/engine_under_budget.h"
#include "tools/random_models/lora_random.h"
#include "tools/random_models/flux_pipeline_random.h"
#include "tools/random_models/pipeline_random.h"

namespace diffusiond {
namespace {

constexpr char kPipeline[] = "pipe";
// About 300 words: more tokens than T5's demo limit, so every encoder
// encodes its longest input.
std::string long_prompt() {
  std::string p;
  for (int i = 0; i < 300; ++i) absl::StrAppend(&p, i == 0 ? "" : " ", "lantern");
  return p;
}

std::string component(absl::string_view name) { return absl::StrCat(kPipeline, "/", name); }

// The most `ram` holds reserved from now on, as its high-water mark above
// what is committed now (nothing commits while the calls measured run).
class ReservedPeak {
 public:
  explicit ReservedPeak(Budget& ram) : ram_(ram), committed_(ram.snapshot().committed_bytes) { ram.reset_high_water(); }
  int64_t bytes() const { return ram_.snapshot().high_water_bytes - committed_; }

 private:
  Budget& ram_;
  const int64_t committed_;
};

class CallTable {
 public:
  explicit CallTable(Budget& ram) : ram_(ram) {}

  // Runs `call` (false: it failed) and prints its line; returns false if
  // it failed.
  bool measure(const std::string& name, const std::function<bool()>& call) {
    const absl::StatusOr<ProcessMemory> before = read_process_memory();
    if (!before.ok() || !reset_peak_rss().ok()) return false;
    const ReservedPeak reserved(ram_);
    const bool ok = call();
    const absl::StatusOr<ProcessMemory> peak = read_process_memory();
    const int64_t most_reserved = reserved.bytes();
    const absl::StatusOr<ProcessMemory> after = read_process_memory();
    if (!ok || !peak.ok() || !after.ok()) {
      std::fprintf(stderr, "call %s failed\n", name.c_str());
      return false;
    }
    std::printf("call=%s reserved_bytes=%lld peak_growth_bytes=%lld after_growth_bytes=%lld\n", name.c_str(),
                static_cast<long long>(most_reserved), static_cast<long long>(peak->peak_rss_bytes - before->rss_bytes),
                static_cast<long long>(after->rss_bytes - before->rss_bytes));
    std::fflush(stdout);
    return true;
  }

 private:
  Budget& ram_;
};

bool report(const absl::Status& s, absl::string_view what) {
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", std::string(what).c_str(), s.ToString().c_str());
  return s.ok();
}

// The conditioning every text encoder of `family` gives `prompt`, merged
// as Generate merges it, with the family's scalars for `denoiser`.
absl::StatusOr<Conditioning> conditioning_of(Engine& engine, const PipelineFamily& family, const ModelInfo& denoiser,
                                             const std::string& prompt) {
  absl::StatusOr<Conditioning> scalars = family.scalar_conditioning(3.5, denoiser);
  if (!scalars.ok()) return scalars.status();
  Conditioning merged = *std::move(scalars);
  for (const PipelineComponent& c : family.components()) {
    if (c.role != ModelRole::kTextEncoder) continue;
    absl::StatusOr<EncodedPrompt> e = encode_prompt(engine, component(c.name), prompt, {});
    if (!e.ok()) return e.status();
    for (auto& [k, t] : e->conditioning.tensors) merged.tensors[k] = std::move(t);
  }
  return merged;
}

// A Step's named inputs (docs/api.md) for one latent of side x side.
NamedTensors step_inputs(bool flux, const Conditioning& c, int64_t side, int64_t channels) {
  NamedTensors in;
  for (const auto& [k, t] : c.tensors) in[k] = t.unsqueeze(0);
  if (flux) {
    const int64_t tokens = (side / 2) * (side / 2);
    in["hidden_states"] = torch::randn({1, tokens, channels * 4});
    in["timestep"] = torch::full({1}, 0.5);
    in["img_ids"] = torch::zeros({tokens, 3});
    in["txt_ids"] = torch::zeros({in.at("encoder_hidden_states").size(1), 3});
    for (const auto& [k, v] : c.scalars) in[k] = torch::full({1}, v);
  } else {
    in["x"] = torch::randn({1, channels, 1, side, side});
    in["t"] = torch::full({1}, 0.5);
  }
  return in;
}

GenerateRequest generate_request(int64_t pixels, bool guided) {
  GenerateRequest r;
  r.pipeline = kPipeline;
  r.prompt = long_prompt();
  r.width = r.height = pixels;
  r.steps = 1;
  r.guidance_scale = guided ? 4.0 : 3.5;
  return r;
}

// Four Z-Image Generates at once under a budget for two of three
// components (see the file comment).
int run_concurrent(const std::string& models_dir) {
  int64_t all_three = 0, largest = 0, second = 0, most_reserved = 0;
  EngineOptions options;
  options.models_dir = models_dir;
  std::unique_ptr<Budget> ram;
  std::unique_ptr<Engine> engine;
  {
    if (!report(testing::start_engine(options, int64_t{8} << 30, &ram, &engine), "engine")) return 1;
    for (const char* c : {"text_encoder", "transformer", "vae"}) {
      ModelLoadRequest load;
      load.path = component(c);
      absl::StatusOr<ModelInfo> info = engine->load(load);
      if (!report(info.status(), load.path)) return 1;
      const int64_t bytes = info->bytes[kCpuIndex];
      all_three += bytes;
      if (bytes > largest) {
        second = largest;
        largest = bytes;
      } else if (bytes > second) {
        second = bytes;
      }
    }
    const ReservedPeak reserved(*ram);
    if (!report(generate(*engine, models_dir, generate_request(256, true)).status(), "generate")) return 1;
    most_reserved = reserved.bytes();
  }
  engine.reset();
  const int64_t capacity = largest + second + most_reserved;
  const absl::StatusOr<ProcessMemory> before = read_process_memory();
  if (!before.ok() || !reset_peak_rss().ok()) return 1;
  options.max_room_wait = absl::Minutes(10);
  if (!report(testing::start_engine(options, capacity, &ram, &engine), "engine")) return 1;
  std::atomic<int> ok{0};
  std::vector<std::thread> generates;
  for (int i = 0; i < 4; ++i) {
    generates.emplace_back([&, i] {
      GenerateRequest r = generate_request(256, true);
      r.seed = i;
      if (report(generate(*engine, models_dir, r).status(), "concurrent generate")) ++ok;
    });
  }
  for (std::thread& t : generates) t.join();
  const absl::StatusOr<ProcessMemory> peak = read_process_memory();
  if (!peak.ok()) return 1;
  std::printf("concurrent capacity_bytes=%lld all_bytes=%lld ok=%d room_waits=%lld peak_growth_bytes=%lld\n",
              static_cast<long long>(capacity), static_cast<long long>(all_three + most_reserved), ok.load(),
              static_cast<long long>(engine->stats().room_waits),
              static_cast<long long>(peak->peak_rss_bytes - before->rss_bytes));
  return 0;
}

// The FLUX pipeline's Generates switching among three adapters (see the
// file comment), under a budget for the components, the adapters and one
// Generate's reservation, each learnt first under a large budget.
int run_adapters(const std::string& models_dir) {
  const FluxConfig t = demo_flux_pipeline_sizes().transformer;
  const int64_t inner = t.inner_dim();
  const auto lora = [&](std::initializer_list<LoraTensors> modules) {
    LoraTensors all;
    for (const LoraTensors& m : modules) all.insert(all.end(), m.begin(), m.end());
    return all;
  };
  const std::vector<std::pair<std::string, LoraTensors>> files = {
      {"a.safetensors", lora({peft_lora_module("transformer_blocks.0.attn.to_q", inner, inner, 16, 1),
                              peft_lora_module("proj_out", inner, t.out_features(), 16, 2)})},
      {"b.safetensors", lora({peft_lora_module("single_transformer_blocks.0.proj_mlp", inner, t.mlp_hidden(), 16, 3),
                              peft_lora_module("transformer_blocks.0.attn.to_out.0", inner, inner, 8, 4)})},
      {"c.safetensors", lora({peft_lora_module("transformer_blocks.0.attn.to_v", inner, inner, 4, 5)})}};
  for (const auto& [name, tensors] : files) {
    if (!report(write_lora_file(models_dir + "/" + name, tensors), name)) return 1;
  }
  // Each request's adapters, cycled: one, another, two stacked, none, the third.
  const std::vector<std::vector<AdapterRequest>> cycle = {
      {{"a.safetensors", 1.0}}, {{"b.safetensors", 0.8}}, {{"a.safetensors", 0.7}, {"c.safetensors", -0.3}},
      {}, {{"c.safetensors", 1.0}}};
  const auto request = [&](size_t i) {
    GenerateRequest r = generate_request(256, /*guided=*/false);
    r.adapters = cycle[i % cycle.size()];
    r.seed = i;
    return r;
  };
  int base_loads = 0, adapter_loads = 0;
  GenerateOptions options;
  options.on_event = [&](const GenerateEvent& e) {
    // A component readied from the cache is a load event too, saying so.
    if (e.stage != GenerateEvent::Stage::kLoad || e.detail == "already loaded") return;
    ++(absl::StartsWith(e.model_id, "lora:") ? adapter_loads : base_loads);
  };
  EngineOptions engine_options;
  engine_options.models_dir = models_dir;
  std::unique_ptr<Budget> ram;
  std::unique_ptr<Engine> engine;
  // Learn what everything takes: every component and adapter loaded, and
  // the most one Generate reserves beside them.
  int64_t capacity = 0;
  {
    if (!report(testing::start_engine(engine_options, int64_t{8} << 30, &ram, &engine), "engine")) return 1;
    for (size_t i = 0; i < cycle.size(); ++i) {
      if (!report(generate(*engine, models_dir, request(i), options).status(), "generate")) return 1;
    }
    const ReservedPeak reserved(*ram);
    if (!report(generate(*engine, models_dir, request(2), options).status(), "generate")) return 1;
    capacity = ram->snapshot().committed_bytes + reserved.bytes();
  }
  engine.reset();
  if (!report(testing::start_engine(engine_options, capacity, &ram, &engine), "engine")) return 1;
  // The first Generate loads every component (and no adapter); the 20
  // load no component.
  if (!report(generate(*engine, models_dir, request(3), options).status(), "generate")) return 1;
  base_loads = adapter_loads = 0;
  const int64_t misses = engine->stats().misses;
  const int64_t committed = ram->snapshot().committed_bytes;
  const absl::StatusOr<ProcessMemory> before = read_process_memory();
  if (!before.ok() || !reset_peak_rss().ok()) return 1;
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    if (!report(generate(*engine, models_dir, request(i), options).status(), "generate")) return 1;
  }
  const absl::StatusOr<ProcessMemory> after = read_process_memory();
  if (!after.ok()) return 1;
  std::printf(
      "adapters requests=%d base_loads=%d adapter_loads=%d capacity_bytes=%lld peak_growth_bytes=%lld "
      "after_growth_bytes=%lld committed_bytes=%lld cache_loads=%lld\n",
      kRequests, base_loads, adapter_loads, static_cast<long long>(capacity),
      static_cast<long long>(after->peak_rss_bytes - before->rss_bytes),
      static_cast<long long>(after->rss_bytes - before->rss_bytes),
      static_cast<long long>(committed), static_cast<long long>(engine->stats().misses - misses));
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) return 2;
  const bool flux = std::strcmp(argv[1], "flux") == 0;
  const bool concurrent = argc > 2 && std::strcmp(argv[2], "concurrent") == 0;
  const bool adapters = argc > 2 && std::strcmp(argv[2], "adapters") == 0;
  tune_allocator_for_serving();
  char dir_template[] = "/tmp/call_rss_XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return 1;
  const std::string models_dir = dir_template;
  PipelineSizes sizes = demo_pipeline_sizes();
  // Concurrent: a wider encoder and a deeper transformer, as in
  // pipeline/generate_test.cc, so that a budget for two of three
  // components is well short of all three.
  if (concurrent) {
    sizes.text_encoder.vocab_size = 65536;
    sizes.transformer.n_layers *= 4;
  }
  const absl::Status written =
      flux ? write_random_flux_pipeline(demo_flux_pipeline_sizes(), models_dir + "/" + kPipeline, 1)
           : write_random_pipeline(sizes, models_dir + "/" + kPipeline, 1);
  const int code = [&]() -> int {
    if (!report(written, "write the pipeline")) return 1;
    if (concurrent) return flux ? 2 : run_concurrent(models_dir);
    if (adapters) return flux ? run_adapters(models_dir) : 2;
    EngineOptions options;
    options.models_dir = models_dir;
    std::unique_ptr<Budget> ram;
    std::unique_ptr<Engine> engine;
    if (!report(testing::start_engine(options, int64_t{8} << 30, &ram, &engine), "engine")) return 1;
    const PipelineFamily* family = find_pipeline_family(flux ? "FluxPipeline" : "ZImagePipeline");
    if (family == nullptr) return 1;
    std::string denoiser_id, decoder_id;
    for (const PipelineComponent& c : family->components()) {
      ModelLoadRequest load;
      load.path = component(c.name);
      if (!report(engine->load(load).status(), load.path)) return 1;
      if (c.role == ModelRole::kDenoiser) denoiser_id = load.path;
      if (c.role == ModelRole::kVae) decoder_id = load.path;
    }
    ModelLoadRequest denoiser_request;
    denoiser_request.path = denoiser_id;
    absl::StatusOr<ModelInfo> denoiser = engine->find(denoiser_request);
    if (!report(denoiser.status(), "denoiser")) return 1;
    const int64_t channels = denoiser->geometry.channels;
    const std::string prompt = long_prompt();
    absl::StatusOr<Conditioning> positive = conditioning_of(*engine, *family, *denoiser, prompt);
    absl::StatusOr<Conditioning> negative = conditioning_of(*engine, *family, *denoiser, "");
    if (!report(positive.status(), "conditioning") || !report(negative.status(), "conditioning")) return 1;
    const bool guided = !flux;
    Engine& e = *engine;

    const auto encode = [&](const std::string& encoder) {
      return report(encode_prompt(e, encoder, prompt, {}).status(), "encode");
    };
    const auto step = [&](int64_t side) {
      return report(e.step(denoiser_id, step_inputs(flux, *positive, side, channels)).status(), "step");
    };
    const auto denoise = [&](int64_t side) {
      EngineDenoiseRequest r;
      r.model = ModelHandle::by_id(denoiser_id);
      r.latent_shape = {channels, side, side};
      r.steps = 1;
      r.guidance_scale = guided ? 4.0 : 1.0;
      r.positive = *positive;
      if (guided) r.negative = *negative;
      return report(e.denoise(r, {}).status(), "denoise");
    };
    const auto decode = [&](int64_t side) {
      return report(e.decode_image(ModelHandle::by_id(decoder_id), torch::randn({channels, side, side})).status(), "decode");
    };
    const auto generate = [&](int64_t pixels) {
      return report(diffusiond::generate(e, models_dir, generate_request(pixels, guided)).status(), "generate");
    };
    // Warm-up: the process's one-time state, measured by nothing.
    if (!step(16) || !denoise(16) || !decode(16) || !generate(128)) return 1;
    for (const PipelineComponent& c : family->components()) {
      if (c.role == ModelRole::kTextEncoder && !encode(component(c.name))) return 1;
    }

    CallTable table(*ram);
    bool ok = true;
    for (const PipelineComponent& c : family->components()) {
      if (c.role != ModelRole::kTextEncoder) continue;
      ok = ok && table.measure(absl::StrCat("encode_", c.name), [&] { return encode(component(c.name)); });
    }
    for (int64_t side : {64, 96}) {
      ok = ok && table.measure(absl::StrCat("step_", side), [&] { return step(side); });
    }
    for (int64_t side : {64, 96, 128}) {
      ok = ok && table.measure(absl::StrCat("denoise_", side), [&] { return denoise(side); });
    }
    for (int64_t side : {64, 128}) {
      ok = ok && table.measure(absl::StrCat("decode_", side), [&] { return decode(side); });
    }
    for (int64_t pixels : {256, 512}) {
      ok = ok && table.measure(absl::StrCat("generate_", pixels), [&] { return generate(pixels); });
    }
    return ok ? 0 : 1;
  }();
  remove_tree(models_dir);
  return code;
}

}  // namespace
}  // namespace diffusiond

int main(int argc, char** argv) { return diffusiond::run(argc, argv); }
