// The port's half of the side-by-side CPU comparison with upstream diffusers
// (tests/bench/z_image_vs_upstream.py drives both, one process per run, so
// each peak RSS is that run's alone).
//
//   z_image_forward_cli write-model DIR [--seed N]
//       writes the mid-size Z-Image (bf16 diffusers folder) that both sides load
//   z_image_forward_cli run DIR INPUTS.safetensors --threads N --iters K
//                          [--fp8] [--out OUT.safetensors]
//       loads DIR at float32 (FP8 storage with --fp8), runs one untimed forward
//       and K timed ones on INPUTS' `x` [C,F,H,W], `t` [1], `cap_feats` [L,D],
//       and prints one JSON line: impl, threads, seconds per forward,
//       peak_rss_bytes (VmHWM), weights_bytes, and where the peak comes
//       from: start_rss_bytes (libraries, before the load), loaded_rss_bytes
//       (after it) and load_peak_rss_bytes; --profile FILE records the
//       last forward with libtorch's profiler as a Chrome trace (per-op
//       self times: tests/bench/profile_summary.py FILE)
//
// Exit 1 with one line on stderr for any failure.
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/types.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/cpu/blas_kernels.h"
#include "core/engine/model_admission.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/model_loader.h"
#include "core/models/z_image/z_image_model.h"
#include "core/precision/torch_dtype.h"
#include "kernels/torch_compat.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "z_image_forward_cli: %s\n", message.c_str());
  std::exit(1);
}

torch::Tensor read_tensor(const Checkpoint& file, const std::string& name) {
  const TensorRecord* t = file.find(name);
  if (t == nullptr) fail(absl::StrCat("inputs lack tensor '", name, "'"));
  torch::Tensor out = torch::empty(t->shape, torch::TensorOptions().dtype(storage_scalar_type(t->dtype)));
  if (absl::Status s = file.read(*t, static_cast<char*>(out.data_ptr())); !s.ok()) fail(s.ToString());
  return out;
}

int run(const std::vector<std::string>& args) {
  if (args.size() < 2) fail("run needs DIR and INPUTS");
  int threads = 1, iters = 1;
  bool fp8 = false;
  std::string out_path, profile_path;
  for (size_t i = 2; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size();
    if (args[i] == "--threads" && has_value && absl::SimpleAtoi(args[i + 1], &threads) && threads > 0) {
      ++i;
    } else if (args[i] == "--iters" && has_value && absl::SimpleAtoi(args[i + 1], &iters) && iters > 0) {
      ++i;
    } else if (args[i] == "--out" && has_value) {
      out_path = args[++i];
    } else if (args[i] == "--profile" && has_value) {
      profile_path = args[++i];
    } else if (args[i] == "--fp8") {
      fp8 = true;
    } else {
      fail(absl::StrCat("bad argument '", args[i], "'"));
    }
  }
  compat::set_compute_threads(threads);
  tune_allocator_for_serving();

  const auto rss = [] { return read_process_memory().value_or(ProcessMemory{}); };
  const int64_t start_rss = rss().rss_bytes;
  Budget ram(Device::kCpu, int64_t{64} << 30);
  ModelCacheOptions co;
  co.ram_budget = &ram;
  std::unique_ptr<ModelCache> cache = std::move(*ModelCache::create(co));
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(args[0]);
  if (!ckpt.ok()) fail(ckpt.status().ToString());
  ModelLoadOptions options;
  if (fp8) options.fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<Pin> pin = cache->get_or_load("m", [&] { return load_model(**ckpt, options, *cache); });
  if (!pin.ok()) fail(pin.status().ToString());
  const auto* model = dynamic_cast<const ZImageModel*>(&pin->as<LoadedModel>()->model());
  if (model == nullptr) fail("not a Z-Image model");

  const ProcessMemory loaded = rss();
  absl::StatusOr<std::unique_ptr<Checkpoint>> inputs = Checkpoint::open(args[1]);
  if (!inputs.ok()) fail(inputs.status().ToString());
  const torch::Tensor x = read_tensor(**inputs, "x"), t = read_tensor(**inputs, "t"),
                      cap = read_tensor(**inputs, "cap_feats");

  std::vector<double> seconds;
  torch::Tensor last;
  for (int i = 0; i <= iters; ++i) {
    std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
    if (i == iters && !profile_path.empty()) {
      profile = std::make_unique<torch::autograd::profiler::RecordProfile>(profile_path);
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<torch::Tensor>> out = model->forward({x}, t, {cap});
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    profile.reset();
    if (!out.ok()) fail(out.status().ToString());
    if (i > 0) seconds.push_back(took.count());  // the first forward is the warm-up
    last = (*out)[0];
  }
  if (!out_path.empty()) {
    last = last.to(torch::kFloat32).contiguous();
    absl::StatusOr<std::unique_ptr<SafetensorsWriter>> writer =
        SafetensorsWriter::create(out_path, {{"out", DType::kF32, last.sizes().vec()}});
    if (!writer.ok()) fail(writer.status().ToString());
    if (absl::Status s = (*writer)->append(last.data_ptr(), static_cast<int64_t>(last.nbytes())); !s.ok()) {
      fail(s.ToString());
    }
    if (absl::Status s = (*writer)->close(); !s.ok()) fail(s.ToString());
  }
  std::printf(
      "{\"impl\":\"port\",\"threads\":%d,\"seconds\":[%s],\"peak_rss_bytes\":%lld,\"weights_bytes\":%lld,"
      "\"start_rss_bytes\":%lld,\"loaded_rss_bytes\":%lld,\"load_peak_rss_bytes\":%lld}\n",
      threads, absl::StrJoin(seconds, ",").c_str(), static_cast<long long>(rss().peak_rss_bytes),
      static_cast<long long>(model->weights().nbytes()), static_cast<long long>(start_rss),
      static_cast<long long>(loaded.rss_bytes), static_cast<long long>(loaded.peak_rss_bytes));
  return 0;
}

int main_impl(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "write-model") {
    uint64_t seed = 7;
    if (args.size() == 4 && args[2] == "--seed" && !absl::SimpleAtoi(args[3], &seed)) fail("bad --seed");
    if (absl::Status s = write_random_z_image(mid_size_z_image_config(), args[1], seed); !s.ok()) {
      fail(s.ToString());
    }
    return 0;
  }
  if (!args.empty() && args[0] == "run") return run({args.begin() + 1, args.end()});
  std::fprintf(stderr,
               "usage: z_image_forward_cli write-model DIR [--seed N]\n"
               "       z_image_forward_cli run DIR INPUTS --threads N --iters K [--fp8] [--out FILE]\n"
               "                           [--profile TRACE.json]\n");
  return 2;
}

}  // namespace
}  // namespace diffusiond

int main(int argc, char** argv) {
  // Before any BLAS call: the side-by-side figures name the kernels they ran on.
  const diffusiond::BlasChoice blas = diffusiond::ensure_blas_kernels(argv);
  std::fprintf(stderr, "blas: %s\n", blas.summary.c_str());
  return diffusiond::main_impl(argc, argv);
}
