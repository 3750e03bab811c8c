// Load time of a 1 GiB bf16 checkpoint (page cache warm), and the page
// faults a load takes, against plain
// sequential reads of the same file: into one reused buffer (the I/O floor)
// and into fresh buffers of the same total size (the I/O plus the cost of
// making that much new memory resident, which any load must pay).
//
// With DIFFUSIOND_LOAD_BENCH_REAL_DIR set, also a real-config checkpoint,
// cold (its pages dropped from the page cache first) and warm, against
// `cat` of the same files (a sequential read into one reused buffer): the
// Z-Image-Turbo transformer (docs/configs/z-image-turbo/transformer, 12.3 GB
// of bf16; DIFFUSIOND_LOAD_BENCH_REAL_CONFIG names another Z-Image config),
// written there at random once and reused by later runs.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/cache/model_cache.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/engine/model_admission.h"
#include "core/loader/streaming_loader.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/util/file_text.h"
#include "tools/random_models/z_image_random.h"

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


// --- A real-config checkpoint, cold and warm ---

const char* real_dir() { return std::getenv("DIFFUSIOND_LOAD_BENCH_REAL_DIR"); }

// The real-config checkpoint's folder, written at random on first use.
const std::string& real_checkpoint() {
  static const std::string* const folder = [] {
    auto* f = new std::string(real_dir());
    if (std::filesystem::exists(std::filesystem::path(*f) / "config.json")) return f;
    const char* config_path = std::getenv("DIFFUSIOND_LOAD_BENCH_REAL_CONFIG");
    const std::string path = config_path != nullptr ? config_path : "docs/configs/z-image-turbo/transformer/config.json";
    absl::StatusOr<std::string> json = read_text_file(path);
    absl::StatusOr<ZImageConfig> config =
        json.ok() ? parse_z_image_config(*json, path) : absl::StatusOr<ZImageConfig>(json.status());
    absl::Status written = config.ok() ? write_random_z_image(*config, *f, 48) : config.status();
    if (!written.ok()) {
      std::fprintf(stderr, "load_bench: cannot write %s: %s\n", f->c_str(), std::string(written.message()).c_str());
      std::exit(1);
    }
    return f;
  }();
  return *folder;
}

std::vector<std::string> real_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(real_checkpoint())) {
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  }
  return files;
}

// Drops the files' pages from the page cache (they are clean), so the next
// read comes from the storage.
void drop_from_page_cache(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// Arg: 1 = cold, 0 = warm. What `cat FILES > /dev/null` does: sequential
// reads into one reused buffer.
void BM_CatReal(benchmark::State& state) {
  const std::vector<std::string> files = real_files();
  std::vector<char> buffer(int64_t{1} << 17);
  int64_t bytes = 0;
  for (auto _ : state) {
    if (state.range(0) == 1) {
      state.PauseTiming();
      drop_from_page_cache(files);
      state.ResumeTiming();
    }
    for (const std::string& f : files) {
      const int fd = ::open(f.c_str(), O_RDONLY);
      for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) bytes += n;
      ::close(fd);
    }
  }
  state.SetBytesProcessed(bytes);
  state.SetLabel(state.range(0) == 1 ? "cat, cold" : "cat, warm");
}

// The real-config checkpoint opened and planned at bf16 compute, FP8
// e4m3fn storage or bf16; nullopt, with the benchmark skipped, on error.
struct RealLoad {
  std::vector<std::string> files;
  std::unique_ptr<Checkpoint> checkpoint;
  LoadPlan plan;
};
std::optional<RealLoad> open_real(benchmark::State& state, bool fp8) {
  tune_allocator_for_serving();
  RealLoad real;
  real.files = real_files();
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(real_checkpoint());
  PlanOptions options;
  options.compute_dtype = torch::kBFloat16;
  if (fp8) options.fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<LoadPlan> plan = ckpt.ok() ? plan_load(**ckpt, options) : absl::StatusOr<LoadPlan>(ckpt.status());
  if (!plan.ok()) {
    state.SkipWithError(std::string(plan.status().message()).c_str());
    return std::nullopt;
  }
  real.checkpoint = *std::move(ckpt);
  real.plan = *std::move(plan);
  return real;
}

// Args: cold (1) or warm (0); FP8 e4m3fn storage (1, the daemon's default)
// or bf16 (0). Counters: faults per load, and RSS after the load over its
// reservation (the rule: within 1.02x).
void BM_LoadReal(benchmark::State& state) {
  std::optional<RealLoad> real = open_real(state, /*fp8=*/state.range(1) == 1);
  if (!real.has_value()) return;
  const std::vector<std::string>& files = real->files;
  const Checkpoint& ckpt = *real->checkpoint;
  const LoadPlan* plan = &real->plan;
  Budget ram(Device::kCpu, int64_t{64} << 30);
  int64_t faults = 0;
  double rss_over_reservation = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (state.range(0) == 1) drop_from_page_cache(files);
    const int64_t rss_before = read_process_memory()->rss_bytes;
    auto r = ram.reserve(plan->reservation_bytes());
    state.ResumeTiming();
    const int64_t faults_before = minor_faults();
    auto store = stream_weights(ckpt, *plan, *r);
    faults += minor_faults() - faults_before;
    if (!store.ok()) state.SkipWithError(std::string(store.status().message()).c_str());
    state.PauseTiming();
    rss_over_reservation = std::max(rss_over_reservation,
                                    static_cast<double>(read_process_memory()->rss_bytes - rss_before) /
                                        static_cast<double>(plan->reservation_bytes()));
    store = absl::CancelledError("free outside the timing");
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * ckpt.weight_bytes());
  state.counters["faults_per_load"] = static_cast<double>(faults) / static_cast<double>(state.iterations());
  state.counters["rss_over_reservation"] = rss_over_reservation;
  state.SetLabel(absl::StrCat(state.range(1) == 1 ? "fp8 e4m3fn" : "bf16", state.range(0) == 1 ? ", cold" : ", warm"));
}

// A model switch: the same checkpoint loaded under two keys in turn, through
// the cache, under a budget that holds one of them, so each load first
// evicts the other (whose pages it reuses: core/memory/recycled_pages.h).
// FP8 e4m3fn at bf16 compute, the daemon's default. Arg: cold (1) or warm
// (0). Counters: faults per switch, and the peak RSS during a switch above
// what the process held before the first load, over the reservation.
void BM_SwitchReal(benchmark::State& state) {
  std::optional<RealLoad> real = open_real(state, /*fp8=*/true);
  if (!real.has_value()) return;
  const std::vector<std::string>& files = real->files;
  const Checkpoint& ckpt = *real->checkpoint;
  const LoadPlan* plan = &real->plan;
  Budget ram(Device::kCpu, plan->reservation_bytes() * 3 / 2);
  ModelCacheOptions cache_options;
  cache_options.ram_budget = &ram;
  std::unique_ptr<ModelCache> cache = *ModelCache::create(cache_options);
  const Loader loader = [&] { return load_weights(ckpt, *plan, *cache); };
  const int64_t rss_before = read_process_memory()->rss_bytes;
  if (absl::StatusOr<Pin> first = cache->get_or_load("a", loader); !first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  int64_t faults = 0, switches = 0;
  double peak_over_reservation = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (state.range(0) == 1) drop_from_page_cache(files);
    (void)reset_peak_rss();
    const int64_t faults_before = minor_faults();
    state.ResumeTiming();
    absl::StatusOr<Pin> pin = cache->get_or_load(++switches % 2 == 1 ? "b" : "a", loader);
    state.PauseTiming();
    faults += minor_faults() - faults_before;
    if (!pin.ok()) state.SkipWithError(std::string(pin.status().message()).c_str());
    peak_over_reservation =
        std::max(peak_over_reservation, static_cast<double>(read_process_memory()->peak_rss_bytes - rss_before) /
                                            static_cast<double>(plan->reservation_bytes()));
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * ckpt.weight_bytes());
  state.counters["faults_per_switch"] = static_cast<double>(faults) / static_cast<double>(state.iterations());
  state.counters["peak_over_reservation"] = peak_over_reservation;
  state.SetLabel(state.range(0) == 1 ? "fp8 e4m3fn switch, cold" : "fp8 e4m3fn switch, warm");
}

// Registered only when asked for: the checkpoint is 12.3 GB.
const bool real_registered = [] {
  if (real_dir() == nullptr) return false;
  // Rates over wall time: a load's work runs on every core, and the main
  // thread's CPU time would count only its share.
  benchmark::RegisterBenchmark("BM_CatReal", BM_CatReal)
      ->Arg(1)
      ->Arg(0)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(2)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_LoadReal", BM_LoadReal)
      ->Args({1, 1})
      ->Args({0, 1})
      ->Args({1, 0})
      ->Args({0, 0})
      ->Unit(benchmark::kMillisecond)
      ->Iterations(2)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_SwitchReal", BM_SwitchReal)
      ->Arg(1)
      ->Arg(0)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(4)
      ->UseRealTime();
  return true;
}();

}  // namespace
}  // namespace diffusiond
