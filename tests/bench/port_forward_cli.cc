// The port's half of the side-by-side benchmarks against upstream diffusers
// (tests/bench/vs_upstream.py drives both sides, one process per run, so that
// each peak — RSS, VRAM — is that run's alone).
//
//   port_forward_cli write-model DIR --arch A [--config FILE | --size demo|mid]
//                                [--seed N] [--device D]
//       writes a model folder of random bf16 weights that both sides load: the
//       architecture's demo or mid-size config, or FILE (a diffusers or
//       transformers config.json). A is a denoiser (z-image, flux, cosmos) or
//       one of the benchmarks' text encoders and decoder (qwen2.5-vl,
//       qwen3-vl, autoencoder-kl-qwen-image: demo_models.h). --device cuda:N
//       makes the values there (a real-size model has billions; the CPU's
//       generator would take minutes).
//   port_forward_cli write-pipeline DIR [--configs DIR] [--seed N] [--device D]
//       writes a Z-Image pipeline folder of random bf16 weights: the demo's
//       sizes, or the text encoder, transformer and VAE configs under
//       --configs (docs/configs/z-image-turbo: Qwen3-4B, Z-Image-Turbo and
//       its VAE, 20 GB), with a byte-level tokenizer.
//   port_forward_cli generate DIR [--device cpu|sim|cuda:N] [--dtype ...]
//                             [--width W] [--height H] [--steps N]
//                             [--prompt TEXT] [--seed N] [--vram_budget B]
//                             [--sim_copy_rate BYTES_PER_S]
//                             [--ram_budget B] [--threads N]
//       runs one Generate of the pipeline folder DIR through the engine, as
//       the daemon's Generate does: every stage on the device, the
//       components placed under the VRAM budget, the device's memory
//       sampled as in `run`. Prints one JSON line: the stages (load, encode,
//       each denoise step, decode, evictions) with seconds and device, and
//       the peaks against the budget.
//   port_forward_cli run DIR INPUTS... [--device cpu|sim|cuda:N]
//                        [--dtype float32|bfloat16] [--fp8] [--fp8_fast_accum]
//                        [--narrow_weights] [--vram_budget BYTES] [--ram_budget BYTES]
//                        [--sim_copy_rate BYTES_PER_S]
//                        [--threads N] [--iters K] [--out_dir DIR]
//                        [--profile FILE]
//       loads DIR through the engine, as the daemon does (FP8 e4m3fn storage
//       with --fp8, its scaled matmuls on cuBLAS's fast accumulation with
//       --fp8_fast_accum; weights kept narrow with --narrow_weights), then for each
//       INPUTS file (the model's Step inputs, by name; docs/api.md) runs one
//       untimed Step and K timed ones through Engine::step, outputs back on
//       the host: a denoiser's velocity, a text encoder's hidden states, a
//       VAE's decoded image. With a device (cuda:N, or sim: host memory posing as one)
//       the model is placed under a VRAM budget of --vram_budget bytes
//       (default: what the device has free, less 2 GiB; sim: 8 GiB), and
//       what the device really holds is sampled every millisecond during the
//       calls: its free memory (cudaMemGetInfo on CUDA) against the baseline
//       taken before the first call, and the caching allocator's peak.
//       --sim_copy_rate makes the sim device's copies as slow as a bus
//       (an H200's pinned copies ran at 55e9 bytes/s), so that streaming's
//       overlap with compute shows on a CPU machine. Prints one JSON line;
//       see kUsage below for its fields. --out_dir
//       writes each run's output as port.<i>.safetensors (`out`, float32);
//       --profile records the last Step of the last run with libtorch's
//       profiler as a Chrome trace (tests/bench/profile_summary.py).
//
// Exit 1 with one line on stderr for any failure, 2 for a bad command line.
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/cpu/blas_kernels.h"
#include "core/engine/engine.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/cosmos/cosmos_config.h"
#include "core/models/cosmos/cosmos_model.h"
#include "core/models/flux/flux_config.h"
#include "core/models/flux/flux_model.h"
#include "core/models/qwen25_vl/qwen25_vl_config.h"
#include "core/models/qwen25_vl/qwen25_vl_model.h"
#include "core/models/qwen3/qwen3_config.h"
#include "core/models/qwen3_vl/qwen3_vl_config.h"
#include "core/models/qwen3_vl/qwen3_vl_model.h"
#include "core/models/vae/vae_config.h"
#include "core/models/wan_vae/wan_vae_config.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/models/z_image/z_image_config.h"
#include "core/models/z_image/z_image_model.h"
#include "core/pipeline/generate.h"
#include "core/precision/torch_dtype.h"
#include "core/util/file_text.h"
#include "core/vram/cuda_device.h"
#include "core/vram/sim_device.h"
#include "kernels/onednn_cpu.h"
#include "kernels/torch_compat.h"
#include "tools/random_models/cosmos_random.h"
#include "tools/random_models/demo_models.h"
#include "tools/random_models/flux_random.h"
#include "tools/random_models/pipeline_random.h"
#include "tools/random_models/qwen_vl_random.h"
#include "tools/random_models/wan_vae_random.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

constexpr char kUsage[] =
    "usage: port_forward_cli write-model DIR --arch ARCH [--config FILE | --size demo|mid]\n"
    "                                    [--seed N] [--device cpu|cuda:N]\n"
    "       port_forward_cli run DIR INPUTS... [--device cpu|sim|cuda:N] [--dtype float32|bfloat16]\n"
    "                            [--fp8] [--fp8_fast_accum] [--narrow_weights] [--vram_budget BYTES]\n"
    "                            [--ram_budget BYTES] [--sim_copy_rate BYTES_PER_S]\n"
    "                            [--threads N] [--iters K] [--out_dir DIR] [--profile FILE]\n"
    "       port_forward_cli write-pipeline DIR [--configs DIR] [--seed N] [--device cpu|cuda:N]\n"
    "       port_forward_cli generate DIR [--device cpu|sim|cuda:N] [--dtype float32|bfloat16]\n"
    "                                 [--width W] [--height H] [--steps N] [--prompt TEXT] [--seed N]\n"
    "                                 [--vram_budget BYTES] [--ram_budget BYTES] [--sim_copy_rate BYTES_PER_S]\n"
    "                                 [--threads N]\n"
    "run prints one JSON line: impl, arch, device, dtype, fp8, fp8_fast_accum, threads, blas, onednn,\n"
    "load_seconds, weights_bytes, vram_budget_bytes, device_baseline_free_bytes, runs [{inputs, batch, seconds,\n"
    "vram_plan, placement_bytes, vram_books_high_water_bytes, device_peak_used_bytes,\n"
    "allocator_peak_reserved_bytes}], device_peak_used_bytes (placement and warm-up included),\n"
    "peak_rss_bytes, start_rss_bytes, loaded_rss_bytes\n"
    "ARCH: z-image, flux, cosmos, qwen2.5-vl, qwen3-vl or autoencoder-kl-qwen-image\n";

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "port_forward_cli: %s\n", message.c_str());
  std::exit(1);
}

[[noreturn]] void bad_usage(const std::string& message) {
  std::fprintf(stderr, "port_forward_cli: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

template <typename T>
T value_or_fail(absl::StatusOr<T> v) {
  if (!v.ok()) fail(v.status().ToString());
  return *std::move(v);
}

void ok_or_fail(const absl::Status& s) {
  if (!s.ok()) fail(s.ToString());
}

// "cpu" or "cuda:N" (torch's spelling), checked.
torch::Device parse_torch_device(const std::string& text) {
  try {
    return torch::Device(text);
  } catch (const c10::Error&) {
    bad_usage(absl::StrCat("bad --device '", text, "'"));
  }
}

// The flags write-model and write-pipeline share: where the random values
// are drawn, and from which seed.
struct WriteOptions {
  uint64_t seed = 7;
  torch::Device device{torch::kCPU};
};

// Parses --seed or --device at args[i] into `o`: the arguments taken (2),
// or 0 when args[i] is neither.
size_t parse_write_flag(const std::vector<std::string>& args, size_t i, WriteOptions& o) {
  if (i + 1 >= args.size()) return 0;
  if (args[i] == "--seed" && absl::SimpleAtoi(args[i + 1], &o.seed)) return 2;
  if (args[i] == "--device") {
    o.device = parse_torch_device(args[i + 1]);
    return 2;
  }
  return 0;
}

// Fails when `device` is a GPU this build or machine cannot use.
void require_device(const torch::Device& device) {
  if (device.is_cuda() && !(compat::kHaveCuda && torch::cuda::is_available())) {
    fail(absl::StrCat("--device ", device.str(), ": this build or machine has no CUDA"));
  }
}

int write_model(const std::vector<std::string>& args) {
  if (args.empty()) bad_usage("write-model needs DIR");
  std::string arch, config_path, size = "mid";
  WriteOptions w;
  for (size_t i = 1; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size();
    if (const size_t took = parse_write_flag(args, i, w)) {
      i += took - 1;
    } else if (args[i] == "--arch" && has_value) {
      arch = args[++i];
    } else if (args[i] == "--config" && has_value) {
      config_path = args[++i];
    } else if (args[i] == "--size" && has_value && (args[i + 1] == "demo" || args[i + 1] == "mid")) {
      size = args[++i];
    } else {
      bad_usage(absl::StrCat("bad argument '", args[i], "'"));
    }
  }
  const std::vector<std::string> components = bench_component_architectures();
  const bool component = std::find(components.begin(), components.end(), arch) != components.end();
  if (arch != kZImageArchitecture && arch != kFluxArchitecture && arch != kCosmosArchitecture && !component) {
    bad_usage(absl::StrCat("unknown --arch '", arch, "'"));
  }
  require_device(w.device);
  const std::string& dir = args[0];
  if (config_path.empty()) {
    if (component && size == "demo") {
      ok_or_fail(write_demo_component(arch, dir, w.seed));
    } else if (component) {
      ok_or_fail(write_mid_size_component(arch, dir, w.seed));
    } else if (size == "demo") {
      ok_or_fail(write_demo_model(arch, dir, w.seed));
    } else {
      (void)value_or_fail(write_mid_size_model(arch, dir, w.seed));
    }
    return 0;
  }
  const std::string text = value_or_fail(read_text_file(config_path));
  if (arch == kZImageArchitecture) {
    ok_or_fail(write_random_z_image(value_or_fail(parse_z_image_config(text, config_path)), dir, w.seed, w.device));
  } else if (arch == kFluxArchitecture) {
    ok_or_fail(write_random_flux(value_or_fail(parse_flux_config(text, config_path)), dir, w.seed, w.device));
  } else if (arch == kCosmosArchitecture) {
    // Drawn on the CPU: the cosmos writer has no device argument.
    ok_or_fail(write_random_cosmos(value_or_fail(parse_cosmos_config(text, config_path)), dir, w.seed));
  } else if (arch == kQwen25VlArchitecture) {
    ok_or_fail(write_random_qwen25_vl(value_or_fail(parse_qwen25_vl_config(text, config_path)), dir, w.seed, w.device));
  } else if (arch == kQwen3VlArchitecture) {
    ok_or_fail(write_random_qwen3_vl(value_or_fail(parse_qwen3_vl_config(text, config_path)), dir, w.seed, w.device));
  } else {
    const nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded()) fail(absl::StrCat(config_path, ": not JSON"));
    const WanVaeConfig vae = value_or_fail(wan_vae_config_from_json(config, config_path));
    ok_or_fail(write_random_wan_vae(vae, dir, w.seed, w.device));
  }
  return 0;
}

int write_pipeline(const std::vector<std::string>& args) {
  if (args.empty()) bad_usage("write-pipeline needs DIR");
  std::string configs;
  WriteOptions w;
  for (size_t i = 1; i < args.size(); ++i) {
    if (const size_t took = parse_write_flag(args, i, w)) {
      i += took - 1;
    } else if (args[i] == "--configs" && i + 1 < args.size()) {
      configs = args[++i];
    } else {
      bad_usage(absl::StrCat("bad argument '", args[i], "'"));
    }
  }
  require_device(w.device);
  PipelineSizes sizes = demo_pipeline_sizes();
  if (!configs.empty()) {
    const auto config_text = [&](const char* component) {
      return value_or_fail(read_text_file(absl::StrCat(configs, "/", component, "/config.json")));
    };
    sizes.text_encoder = value_or_fail(parse_qwen3_config(config_text("text_encoder"), "text_encoder/config.json"));
    sizes.transformer = value_or_fail(parse_z_image_config(config_text("transformer"), "transformer/config.json"));
    sizes.vae = value_or_fail(parse_vae_config(config_text("vae"), "vae/config.json"));
  }
  ok_or_fail(write_random_pipeline(sizes, args[0], w.seed, w.device));
  return 0;
}

NamedTensors read_inputs(const std::string& path) {
  std::unique_ptr<Checkpoint> file = value_or_fail(Checkpoint::open(path));
  NamedTensors inputs;
  for (const TensorRecord& t : file->tensors()) {
    torch::Tensor value = torch::empty(t.shape, torch::TensorOptions().dtype(storage_scalar_type(t.dtype)));
    ok_or_fail(file->read(t, static_cast<char*>(value.data_ptr())));
    inputs[t.name] = std::move(value);
  }
  return inputs;
}

void write_output(const std::string& path, torch::Tensor out) {
  out = out.to(torch::kFloat32).contiguous();
  std::unique_ptr<SafetensorsWriter> writer =
      value_or_fail(SafetensorsWriter::create(path, {{"out", DType::kF32, out.sizes().vec()}}));
  ok_or_fail(writer->append(out.data_ptr(), static_cast<int64_t>(out.nbytes())));
  ok_or_fail(writer->close());
}

// The output the side by side compares: a denoiser's "out", or the one
// output of an encoder's or decoder's step ("hidden_states", "image").
torch::Tensor step_output(const NamedTensors& out) {
  if (const auto it = out.find("out"); it != out.end()) return it->second;
  if (out.size() != 1) fail(absl::StrCat("the step gave ", out.size(), " outputs and no \"out\""));
  return out.begin()->second;
}

// Polls a device's free memory every millisecond on a thread of its own and
// keeps the lowest reading: what the device really held at its fullest,
// whatever the books say. The lowest reading is kept across restarts of a
// window (window_min) and over the sampler's life (min).
class FreeMemorySampler {
 public:
  explicit FreeMemorySampler(const VramDevice& device) : device_(device) {
    const int64_t now = device_.free_bytes();
    min_ = now, window_min_ = now;
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        sample();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  ~FreeMemorySampler() {
    stop_ = true;
    thread_.join();
  }
  // Starts a new window at the current reading.
  void restart_window() {
    sample();
    window_min_ = device_.free_bytes();
  }
  int64_t window_min() {
    sample();
    return window_min_.load();
  }
  int64_t min() {
    sample();
    return min_.load();
  }

 private:
  void sample() {
    const int64_t now = device_.free_bytes();
    for (std::atomic<int64_t>* m : {&min_, &window_min_}) {
      int64_t seen = m->load();
      while (now < seen && !m->compare_exchange_weak(seen, now)) {
      }
    }
  }

  const VramDevice& device_;
  std::atomic<int64_t> min_{0}, window_min_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct RunOptions {
  std::string dir;
  std::vector<std::string> inputs;
  std::string device = "cpu";
  ComputeDtype dtype = ComputeDtype::kFloat32;
  bool fp8 = false;
  bool fp8_fast_accum = false;
  bool narrow_weights = false;
  int64_t vram_budget = 0;  // 0: the default
  double sim_copy_rate = 0;  // bytes/s of the sim device's copies; 0: unthrottled
  int64_t ram_budget = int64_t{64} << 30;
  int threads = 1;
  int iters = 1;
  std::string out_dir;
  std::string profile_path;
};

// Parses the engine's flag at args[i], shared by run and generate: the
// arguments it took (1 or 2), or 0 when args[i] is not one of them.
size_t parse_engine_flag(const std::vector<std::string>& args, size_t i, RunOptions& o) {
  const bool has_value = i + 1 < args.size();
  const std::string value = has_value ? args[i + 1] : "";
  if (args[i] == "--fp8") {
    o.fp8 = true;
    return 1;
  }
  if (args[i] == "--narrow_weights") {
    o.narrow_weights = true;
    return 1;
  }
  if (args[i] == "--fp8_fast_accum") {
    o.fp8_fast_accum = true;
    return 1;
  }
  if (!has_value) return 0;
  if (args[i] == "--device") {
    o.device = value;
  } else if (args[i] == "--dtype" && (value == "float32" || value == "bfloat16")) {
    o.dtype = value == "float32" ? ComputeDtype::kFloat32 : ComputeDtype::kBFloat16;
  } else if (args[i] == "--vram_budget" && absl::SimpleAtoi(value, &o.vram_budget) && o.vram_budget > 0) {
  } else if (args[i] == "--ram_budget" && absl::SimpleAtoi(value, &o.ram_budget) && o.ram_budget > 0) {
  } else if (args[i] == "--sim_copy_rate" && absl::SimpleAtod(value, &o.sim_copy_rate) && o.sim_copy_rate > 0) {
  } else if (args[i] == "--threads" && absl::SimpleAtoi(value, &o.threads) && o.threads > 0) {
  } else {
    return 0;
  }
  return 2;
}

RunOptions parse_run(const std::vector<std::string>& args) {
  RunOptions o;
  size_t i = 0;
  for (; i < args.size() && args[i].rfind("--", 0) != 0; ++i) {
    (o.dir.empty() ? o.dir : o.inputs.emplace_back()) = args[i];
  }
  if (o.dir.empty() || o.inputs.empty()) bad_usage("run needs DIR and at least one INPUTS file");
  while (i < args.size()) {
    if (const size_t took = parse_engine_flag(args, i, o)) {
      i += took;
      continue;
    }
    const bool has_value = i + 1 < args.size();
    const std::string value = has_value ? args[i + 1] : "";
    if (args[i] == "--iters" && has_value && absl::SimpleAtoi(value, &o.iters) && o.iters > 0) {
    } else if (args[i] == "--out_dir" && has_value) {
      o.out_dir = value;
    } else if (args[i] == "--profile" && has_value) {
      o.profile_path = value;
    } else {
      bad_usage(absl::StrCat("bad argument '", args[i], "'"));
    }
    i += 2;
  }
  return o;
}

// The VRAM device `name` names: none for "cpu".
std::unique_ptr<VramDevice> open_device(const RunOptions& o) {
  if (o.device == "cpu") return nullptr;
  if (o.device == "sim") {
    return std::make_unique<SimDevice>(
        SimDeviceOptions{o.vram_budget > 0 ? o.vram_budget : int64_t{8} << 30, o.sim_copy_rate});
  }
  const torch::Device d = parse_torch_device(o.device);
  if (!d.is_cuda()) bad_usage("--device must be cpu, sim or cuda:N");
  std::unique_ptr<VramDevice> device = value_or_fail(open_cuda_device(d.index()));
  // The context and libtorch's state on it, before the baseline is read.
  (void)torch::zeros({1}, torch::TensorOptions().device(device->torch_device())).sum().item<float>();
  return device;
}

int64_t batch_of(const NamedTensors& inputs) {
  for (const char* name : {"x", "hidden_states", "input_ids", "latents"}) {
    if (const auto it = inputs.find(name); it != inputs.end() && it->second.dim() > 0) return it->second.size(0);
  }
  return 1;
}

// The engine as the daemon builds it: on o.device (none for cpu) under a
// RAM budget and a VRAM budget (default: the device's free memory less
// 2 GiB), with the models directory above o.dir.
struct Harness {
  std::unique_ptr<VramDevice> device;
  int cuda_index = -1;
  int64_t baseline_free = 0;  // the device's free memory before any model
  int64_t vram_capacity = 0;
  std::unique_ptr<Budget> ram, vram;
  std::unique_ptr<Engine> engine;
};

Harness make_harness(const RunOptions& o) {
  compat::set_compute_threads(o.threads);
  tune_allocator_for_serving();
  Harness h;
  h.device = open_device(o);
  h.cuda_index = h.device != nullptr && h.device->torch_device().is_cuda() ? h.device->torch_device().index() : -1;
  h.baseline_free = h.device != nullptr ? h.device->free_bytes() : 0;
  h.vram_capacity = o.vram_budget;
  if (h.device != nullptr && h.vram_capacity == 0) {
    h.vram_capacity = std::max<int64_t>(h.baseline_free - (int64_t{2} << 30), 0);
  }
  h.ram = std::make_unique<Budget>(Device::kCpu, o.ram_budget);
  h.vram = std::make_unique<Budget>(Device::kCuda, std::max<int64_t>(h.vram_capacity, 1));
  EngineOptions eo;
  eo.models_dir = std::filesystem::absolute(o.dir).lexically_normal().parent_path().string();
  eo.ram_budget = h.ram.get();
  if (h.device != nullptr) {
    eo.device = h.device.get();
    eo.vram_budget = h.vram.get();
  }
  eo.compute_dtype = o.dtype;
  eo.fp8 = Fp8Options{};
  if (o.fp8) eo.fp8.format = Fp8Format::kE4M3Fn;
  eo.keep_narrow_weights = o.narrow_weights;
  eo.fp8_fast_accum = o.fp8_fast_accum;
  h.engine = value_or_fail(Engine::create(eo));
  return h;
}

ProcessMemory process_memory() { return read_process_memory().value_or(ProcessMemory{}); }

int run(const RunOptions& o) {
  const int64_t start_rss = process_memory().rss_bytes;
  Harness h = make_harness(o);
  Engine* engine = h.engine.get();
  Budget& vram = *h.vram;
  VramDevice* device = h.device.get();
  const int cuda_index = h.cuda_index;
  const int64_t baseline_free = h.baseline_free, vram_capacity = h.vram_capacity;
  const std::filesystem::path dir = std::filesystem::absolute(o.dir).lexically_normal();

  const auto load_start = std::chrono::steady_clock::now();
  ModelLoadRequest request;
  request.path = dir.filename().string();
  request.model_id = "m";
  const ModelInfo loaded = value_or_fail(engine->load(request));
  const std::chrono::duration<double> load_seconds = std::chrono::steady_clock::now() - load_start;
  const ProcessMemory after_load = process_memory();

  nlohmann::json report = {{"impl", "port"},
                           {"arch", loaded.architecture},
                           {"device", o.device},
                           {"dtype", compute_dtype_name(o.dtype)},
                           {"fp8", o.fp8},
                           {"fp8_fast_accum", o.fp8_fast_accum},
                           {"narrow_weights", o.narrow_weights},
                           {"threads", o.threads},
                           {"torch", TORCH_VERSION},
                           {"blas", choose_blas_kernels(probe_blas_kernels()).summary},
                           {"onednn", onednn_description()},
                           {"load_seconds", load_seconds.count()},
                           {"weights_bytes", loaded.bytes[kCpuIndex]},
                           {"vram_budget_bytes", device != nullptr ? vram_capacity : 0},
                           {"device_baseline_free_bytes", baseline_free},
                           {"runs", nlohmann::json::array()}};
  std::unique_ptr<FreeMemorySampler> sampler;
  if (device != nullptr) sampler = std::make_unique<FreeMemorySampler>(*device);

  for (size_t r = 0; r < o.inputs.size(); ++r) {
    const NamedTensors inputs = read_inputs(o.inputs[r]);
    nlohmann::json run = {{"inputs", o.inputs[r]}, {"batch", batch_of(inputs)}};
    std::vector<double> seconds;
    NamedTensors out = value_or_fail(engine->step("m", inputs));  // warm-up: places the model
    if (sampler != nullptr) sampler->restart_window();
    vram.reset_high_water();
    if (cuda_index >= 0) compat::reset_cuda_allocator_peak(cuda_index);
    for (int i = 0; i < o.iters; ++i) {
      std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
      if (r + 1 == o.inputs.size() && i + 1 == o.iters && !o.profile_path.empty()) {
        profile = std::make_unique<torch::autograd::profiler::RecordProfile>(o.profile_path);
      }
      const auto start = std::chrono::steady_clock::now();
      out = value_or_fail(engine->step("m", inputs));  // the outputs are on the host: the step is over
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      seconds.push_back(took.count());
    }
    run["seconds"] = seconds;
    if (device != nullptr) {
      for (const ModelInfo& info : engine->list()) {
        if (info.model_id != "m") continue;
        run["vram_plan"] = info.vram_plan;
        run["placement_bytes"] = info.bytes[kCudaIndex];
        run["streamed_bytes_per_step"] = info.vram_streamed_bytes_per_step;
      }
      run["vram_books_high_water_bytes"] = vram.snapshot().high_water_bytes;
      run["device_peak_used_bytes"] = baseline_free - sampler->window_min();
      if (cuda_index >= 0) run["allocator_peak_reserved_bytes"] = compat::cuda_allocator_peak_reserved(cuda_index);
    }
    if (!o.out_dir.empty()) {
      std::filesystem::create_directories(o.out_dir);
      write_output(absl::StrCat(o.out_dir, "/port.", r, ".safetensors"), step_output(out));
    }
    report["runs"].push_back(run);
  }
  if (sampler != nullptr) report["device_peak_used_bytes"] = baseline_free - sampler->min();
  const ProcessMemory end = process_memory();
  report["peak_rss_bytes"] = end.peak_rss_bytes;
  report["start_rss_bytes"] = start_rss;
  report["loaded_rss_bytes"] = after_load.rss_bytes;
  report["load_peak_rss_bytes"] = after_load.peak_rss_bytes;
  sampler.reset();
  std::printf("%s\n", report.dump().c_str());
  std::fflush(stdout);
  return 0;
}

struct GenerateCliOptions {
  RunOptions engine;  // dir: the pipeline folder
  GenerateRequest request;
};

GenerateCliOptions parse_generate(const std::vector<std::string>& args) {
  GenerateCliOptions g;
  if (args.empty() || args[0].rfind("--", 0) == 0) bad_usage("generate needs DIR");
  g.engine.dir = args[0];
  g.request.width = g.request.height = 1024;
  g.request.steps = 8;
  // Z-Image-Turbo's use, unguided, as the figures in docs/benchmarks.md
  // were measured (ZImagePipeline's own default, 5.0, doubles each step).
  g.request.guidance_scale = 0.0;
  g.request.prompt = "a lighthouse on a cliff at dawn, waves breaking below, soft golden light";
  size_t i = 1;
  while (i < args.size()) {
    if (const size_t took = parse_engine_flag(args, i, g.engine)) {
      i += took;
      continue;
    }
    const bool has_value = i + 1 < args.size();
    const std::string value = has_value ? args[i + 1] : "";
    if (args[i] == "--width" && has_value && absl::SimpleAtoi(value, &g.request.width) && g.request.width > 0) {
    } else if (args[i] == "--height" && has_value && absl::SimpleAtoi(value, &g.request.height) &&
               g.request.height > 0) {
    } else if (args[i] == "--steps" && has_value && absl::SimpleAtoi(value, &g.request.steps) && g.request.steps > 0) {
    } else if (args[i] == "--prompt" && has_value) {
      g.request.prompt = value;
    } else if (args[i] == "--seed" && has_value && absl::SimpleAtoi(value, &g.request.seed)) {
    } else {
      bad_usage(absl::StrCat("bad argument '", args[i], "'"));
    }
    i += 2;
  }
  return g;
}

int generate_once(const GenerateCliOptions& g) {
  const int64_t start_rss = process_memory().rss_bytes;
  Harness h = make_harness(g.engine);
  const std::filesystem::path dir = std::filesystem::absolute(g.engine.dir).lexically_normal();
  GenerateRequest request = g.request;
  request.pipeline = dir.filename().string();

  nlohmann::json stages = nlohmann::json::array();
  GenerateOptions options;
  options.on_event = [&stages](const GenerateEvent& e) {
    nlohmann::json stage = {{"stage", std::string(generate_stage_name(e.stage))},
                            {"model", e.model_id},
                            {"seconds", absl::ToDoubleSeconds(e.time)},
                            {"device", e.device}};
    if (e.stage == GenerateEvent::Stage::kDenoise) stage["step"] = e.step;
    if (!e.detail.empty()) stage["detail"] = e.detail;
    stages.push_back(std::move(stage));
  };
  std::unique_ptr<FreeMemorySampler> sampler;
  if (h.device != nullptr) sampler = std::make_unique<FreeMemorySampler>(*h.device);
  if (h.cuda_index >= 0) compat::reset_cuda_allocator_peak(h.cuda_index);
  const auto start = std::chrono::steady_clock::now();
  const GeneratedImage image = value_or_fail(generate(*h.engine, dir.parent_path().string(), request, options));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;

  nlohmann::json report = {{"impl", "port"},
                           {"what", "generate"},
                           {"device", g.engine.device},
                           {"dtype", compute_dtype_name(g.engine.dtype)},
                           {"fp8", g.engine.fp8},
                           {"threads", g.engine.threads},
                           {"torch", TORCH_VERSION},
                           {"width", request.width},
                           {"height", request.height},
                           {"steps", request.steps},
                           {"image", image.pixels.sizes().vec()},
                           {"seconds", took.count()},
                           {"stages", stages},
                           {"vram_budget_bytes", h.device != nullptr ? h.vram_capacity : 0},
                           {"device_baseline_free_bytes", h.baseline_free}};
  if (sampler != nullptr) {
    report["device_peak_used_bytes"] = h.baseline_free - sampler->min();
    report["vram_books_high_water_bytes"] = h.vram->snapshot().high_water_bytes;
  }
  if (h.cuda_index >= 0) report["allocator_peak_reserved_bytes"] = compat::cuda_allocator_peak_reserved(h.cuda_index);
  const ProcessMemory end = process_memory();
  report["peak_rss_bytes"] = end.peak_rss_bytes;
  report["start_rss_bytes"] = start_rss;
  sampler.reset();
  std::printf("%s\n", report.dump().c_str());
  std::fflush(stdout);
  return 0;
}

int main_impl(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "write-model") return write_model({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "run") return run(parse_run({args.begin() + 1, args.end()}));
  if (!args.empty() && args[0] == "write-pipeline") return write_pipeline({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "generate") return generate_once(parse_generate({args.begin() + 1, args.end()}));
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("%s", kUsage);
    return 0;
  }
  bad_usage("expected write-model, run, write-pipeline or generate");
}

}  // namespace
}  // namespace diffusiond

int main(int argc, char** argv) {
  // Before any BLAS call: the side-by-side figures name the kernels they ran on.
  const diffusiond::BlasChoice blas = diffusiond::ensure_blas_kernels(argv);
  std::fprintf(stderr, "blas: %s\n", blas.summary.c_str());
  return diffusiond::main_impl(argc, argv);
}
