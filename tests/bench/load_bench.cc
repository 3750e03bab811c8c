// Load time of a 1 GiB bf16 checkpoint (page cache warm), and the page
// faults a load takes, against plain
// sequential reads of the same file: into one reused buffer (the I/O floor)
// and into fresh buffers of the same total size (the I/O plus the cost of
// making that much new memory resident, which any load must pay).
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/loader/streaming_loader.h"
#include "core/memory/allocator.h"

namespace diffusiond {
namespace {

// Minor page faults of this process so far: what making fresh weight
// memory resident costs, per page (or per huge page).
int64_t minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

constexpr int kTensors = 64;
constexpr int64_t kRows = 2048, kCols = 4096;

// Removes the generated checkpoint when the benchmark exits.
struct GeneratedFile {
  std::string path =
      (std::filesystem::temp_directory_path() / "diffusiond_load_bench.safetensors").string();
  ~GeneratedFile() { std::filesystem::remove(path); }
} generated;

const std::string& checkpoint_path() {
  static const std::string* const path = [] {
    const std::string* p = &generated.path;
    std::vector<TensorSpec> specs;
    for (int i = 0; i < kTensors; ++i) {
      specs.push_back({absl::StrCat("blocks.", i, ".linear.weight"), DType::kBF16, {kRows, kCols}});
    }
    auto w = SafetensorsWriter::create(*p, specs);
    std::vector<uint16_t> data(kRows * kCols);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint16_t>(0x3B80 + (i * 7919 % 1024));
    for (int i = 0; i < kTensors; ++i) (void)(*w)->append(data.data(), data.size() * 2);
    (void)(*w)->close();
    return p;
  }();
  return *path;
}

void BM_PlainReadReusedBuffer(benchmark::State& state) {
  auto file = open_random_access_file(checkpoint_path());
  std::vector<char> buffer(kRows * kCols * 2);
  for (auto _ : state) {
    for (int64_t off = 0; off < (*file)->size(); off += buffer.size()) {
      const int64_t n = std::min<int64_t>(buffer.size(), (*file)->size() - off);
      (void)(*file)->read_at(off, n, buffer.data());
    }
  }
  state.SetBytesProcessed(state.iterations() * (*file)->size());
}
BENCHMARK(BM_PlainReadReusedBuffer)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_PlainReadFreshBuffers(benchmark::State& state) {
  tune_allocator_for_serving();
  auto file = open_random_access_file(checkpoint_path());
  const int64_t chunk = kRows * kCols * 2;
  for (auto _ : state) {
    std::vector<std::unique_ptr<char[]>> buffers;
    for (int64_t off = 0; off < (*file)->size(); off += chunk) {
      const int64_t n = std::min<int64_t>(chunk, (*file)->size() - off);
      buffers.emplace_back(new char[n]);
      (void)(*file)->read_at(off, n, buffers.back().get());
    }
  }
  state.SetBytesProcessed(state.iterations() * (*file)->size());
}
BENCHMARK(BM_PlainReadFreshBuffers)->Unit(benchmark::kMillisecond)->Iterations(3);

// Arg: 0 = bf16 storage (direct reads), 1 = FP8 e4m3fn, 2 = float32 storage.
void BM_Load(benchmark::State& state) {
  tune_allocator_for_serving();
  auto ckpt = Checkpoint::open(checkpoint_path());
  PlanOptions options;
  if (state.range(0) == 0) options.compute_dtype = torch::kBFloat16;
  if (state.range(0) == 1) options.fp8.format = Fp8Format::kE4M3Fn;
  auto plan = plan_load(**ckpt, options);
  Budget ram(Device::kCpu, int64_t{8} << 30);
  int64_t faults = 0;
  for (auto _ : state) {
    auto r = ram.reserve(plan->reservation_bytes());
    const int64_t faults_before = minor_faults();
    auto store = stream_weights(**ckpt, *plan, *r);
    faults += minor_faults() - faults_before;
    if (!store.ok()) state.SkipWithError(std::string(store.status().message()).c_str());
    benchmark::DoNotOptimize(store);
    state.PauseTiming();
    store = absl::CancelledError("free outside the timing");
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * (*ckpt)->weight_bytes());
  state.counters["faults_per_load"] = static_cast<double>(faults) / static_cast<double>(state.iterations());
  state.SetLabel(state.range(0) == 0 ? "bf16 direct" : state.range(0) == 1 ? "fp8 e4m3fn" : "f32 cast");
}
BENCHMARK(BM_Load)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace diffusiond
