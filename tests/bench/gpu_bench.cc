// gpu_bench: the measurements deploy/gpu-check.sh takes on a GPU machine,
// written as one JSON file.
//
//   gpu_bench --json FILE [--dry-run] [--bytes N]
//
// {"torch_version", "device", "dry_run", "sections": {name: {...}}} plus
// "skipped": "no CUDA device" when there is none (or with --dry-run): then
// every section runs on the CPU with 1 MiB buffers, only to show it works.
// Exit 0 when every section ran or skipped; 1 when one failed (the file
// still holds the others); 2 for a bad command line.
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/numbers.h"
#include "kernels/torch_compat.h"
#include "tests/bench/gpu_bench_layers.h"
#include "tests/bench/gpu_bench_memory.h"
#include "tests/bench/gpu_bench_section.h"
#include "tests/bench/gpu_bench_z_image.h"

namespace diffusiond::bench {
namespace {

// The sections, in the order they run and appear in the file. To add one,
// write `nlohmann::json my_section(const BenchOptions&)` in a file of its
// own (see gpu_bench_memory.h) and name it here.
constexpr Section kSections[] = {
    {"fp8_decode", &fp8_decode_section},
    {"host_to_device", &host_to_device_section},
    {"fused_layers", &fused_layers_section},
    {"z_image_step", &z_image_step_section},
};

constexpr int64_t kGpuBytes = int64_t{1} << 30;

constexpr char kUsage[] = "usage: gpu_bench --json FILE [--dry-run] [--bytes N]\n";

int usage(const char* error) {
  std::fprintf(stderr, "gpu_bench: %s\n%s", error, kUsage);
  return 2;
}

int run(int argc, char** argv) {
  std::string json_path;
  bool dry_run = false;
  int64_t bytes = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--dry-run") {
      dry_run = true;
    } else if (arg == "--bytes" && i + 1 < argc) {
      if (!absl::SimpleAtoi(argv[++i], &bytes) || bytes <= 0) return usage("--bytes needs N > 0");
    } else if (arg == "--help" || arg == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else {
      return usage(("unknown argument " + arg).c_str());
    }
  }
  if (json_path.empty()) return usage("--json FILE is required");

  const bool have_cuda = compat::kHaveCuda && torch::cuda::is_available();
  BenchOptions options;
  options.dry_run = dry_run || !have_cuda;
  options.device = options.dry_run ? torch::Device(torch::kCPU) : torch::Device(torch::kCUDA, 0);
  options.bytes = bytes > 0 ? bytes : options.dry_run ? options.bytes : kGpuBytes;

  nlohmann::json report = {{"torch_version", TORCH_VERSION},
                           {"device", options.device.str()},
                           {"dry_run", options.dry_run},
                           {"bytes", options.bytes}};
  if (options.device.is_cuda()) {
    report["compute_capability"] = compat::cuda_compute_capability(options.device.index());
  }
  if (!have_cuda) report["skipped"] = "no CUDA device";
  bool failed = false;
  nlohmann::json sections = nlohmann::json::object();
  for (const Section& section : kSections) {
    std::fprintf(stderr, "gpu_bench: %s...\n", section.name);
    try {
      sections[section.name] = section.run(options);
    } catch (const c10::Error& e) {
      sections[section.name] = {{"error", e.what_without_backtrace()}};
      failed = true;
    } catch (const std::exception& e) {
      sections[section.name] = {{"error", e.what()}};
      failed = true;
    }
  }
  report["sections"] = sections;

  std::ofstream out(json_path);
  out << report.dump(2) << "\n";
  out.close();
  if (!out) {
    std::fprintf(stderr, "gpu_bench: cannot write %s\n", json_path.c_str());
    return 1;
  }
  std::printf("%s\n", report.dump(2).c_str());
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace diffusiond::bench

int main(int argc, char** argv) { return diffusiond::bench::run(argc, argv); }
