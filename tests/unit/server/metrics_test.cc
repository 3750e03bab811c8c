#include "server/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "core/util/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/authorizer.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::Contains;
using ::testing::Gt;
using ::testing::HasSubstr;
using ::testing::Key;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;

// The samples of a text exposition, keyed by series ("name{labels}"), so a
// test can ask for one exact series and see that others are absent.
std::map<std::string, double> parse_samples(const std::string& text) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line.front() == '#') continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    EXPECT_NE(space, absl::string_view::npos) << line;
    EXPECT_TRUE(absl::SimpleAtod(line.substr(space + 1), &value)) << line;
    samples[std::string(line.substr(0, space))] = value;
  }
  return samples;
}

// A CacheStats source the test changes between scrapes, as the cache would.
class FakeCacheStats {
 public:
  void set(CacheStats stats) {
    MutexLock lock(&mu_);
    stats_ = std::move(stats);
  }
  std::function<CacheStats()> source() {
    return [this] {
      MutexLock lock(&mu_);
      return stats_;
    };
  }

 private:
  Mutex mu_;
  CacheStats stats_ ABSL_GUARDED_BY(mu_);
};

BudgetSnapshot budget(Device device, int64_t capacity, int64_t reserved, int64_t committed,
                      int64_t high_water) {
  BudgetSnapshot b;
  b.device = device;
  b.capacity_bytes = capacity;
  b.reserved_bytes = reserved;
  b.committed_bytes = committed;
  b.high_water_bytes = high_water;
  return b;
}

CacheEntryStats entry(std::string key, int64_t cpu_bytes, int64_t cuda_bytes, int pins = 0) {
  CacheEntryStats e;
  e.key = std::move(key);
  e.bytes = {cpu_bytes, cuda_bytes};
  e.pins = pins;
  return e;
}

// Tells `metrics` that the cache loaded `key`: only loaded models get series.
void load(DaemonMetrics& metrics, const std::string& key) {
  CacheEvent event;
  event.kind = CacheEvent::Kind::kLoaded;
  event.key = key;
  metrics.on_cache_event(event);
}

CacheEvent load_failed(absl::Status status) {
  CacheEvent event;
  event.kind = CacheEvent::Kind::kLoadFailed;
  event.key = "m";
  event.status = std::move(status);
  return event;
}

BuildInfo test_build() {
  return BuildInfo{"1.2.3", "2.1.0", true, 1, "jemalloc 5.3.0", "OpenBLAS 0.3.21", "Cooperlake", "diffusiond", false};
}

TEST(DaemonMetrics, ReportsBudgetsAndResidentModelsAtScrapeTime) {
  FakeCacheStats fake;
  CacheStats stats;
  stats.budgets = {budget(Device::kCpu, 1000, 100, 600, 800),
                   budget(Device::kCuda, 4000, 0, 500, 900)};
  stats.entries = {entry("a", 600, 0, /*pins=*/2), entry("b", 100, 500)};
  CacheEntryStats loading = entry("c", 100, 0, /*pins=*/1);
  loading.loading = true;
  stats.entries.push_back(loading);
  stats.hits = 7;
  stats.misses = 3;
  fake.set(stats);
  DaemonMetrics metrics(test_build(), fake.source());

  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_memory_budget_bytes{device=\"cpu\"}", 1000)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_memory_budget_bytes{device=\"cuda\"}", 4000)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_memory_reserved_bytes{device=\"cpu\"}", 100)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_memory_used_bytes{device=\"cpu\"}", 600)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_memory_used_bytes{device=\"cuda\"}", 500)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_memory_high_water_bytes{device=\"cuda\"}", 900)));
  EXPECT_THAT(s,
              Contains(Pair("diffusiond_model_resident_bytes{model=\"a\",device=\"cpu\"}", 600)));
  // A CPU-only model has no cuda series; a split one has both.
  EXPECT_THAT(s,
              Not(Contains(Key("diffusiond_model_resident_bytes{model=\"a\",device=\"cuda\"}"))));
  EXPECT_THAT(s,
              Contains(Pair("diffusiond_model_resident_bytes{model=\"b\",device=\"cpu\"}", 100)));
  EXPECT_THAT(s,
              Contains(Pair("diffusiond_model_resident_bytes{model=\"b\",device=\"cuda\"}", 500)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_pins{model=\"a\"}", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_pins{model=\"b\"}", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_models_loaded", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_cache_hits_total", 7)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_cache_misses_total", 3)));
  for (const auto& [series, value] : s) {
    EXPECT_THAT(series, Not(HasSubstr("model=\"c\""))) << "a loading entry has no series";
  }

  // The source stops listing "a": its series go with it, at the next scrape.
  stats.entries.erase(stats.entries.begin());
  stats.budgets[0].committed_bytes = 0;
  fake.set(stats);
  s = parse_samples(metrics.scrape_text());
  for (const auto& [series, value] : s) {
    EXPECT_THAT(series, Not(HasSubstr("model=\"a\""))) << "an unloaded model has no series";
  }
  EXPECT_THAT(s, Contains(Pair("diffusiond_memory_used_bytes{device=\"cpu\"}", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_models_loaded", 1)));
}

TEST(DaemonMetrics, EmptyCacheSourceReportsNoCacheSeries) {
  DaemonMetrics metrics(test_build(), nullptr);
  const std::string text = metrics.scrape_text();
  EXPECT_THAT(text, Not(HasSubstr("diffusiond_memory_budget_bytes")));
  EXPECT_THAT(text, HasSubstr("diffusiond_model_loads_total"));
}

TEST(DaemonMetrics, PreCreatesZeroSeriesForDashboards) {
  DaemonMetrics metrics(test_build(), nullptr);
  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  for (const char* result : {"ok", "error", "rejected", "cancelled"}) {
    EXPECT_THAT(s, Contains(Pair(
                       absl::StrCat("diffusiond_model_loads_total{result=\"", result, "\"}"), 0)));
  }
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_evictions_total", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_unloads_total", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_admission_rejections_total", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_cancellations_total{operation=\"denoise\"}", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_queue_rejections_total{queue=\"compute\"}", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_load_seconds_count", 0)));
  EXPECT_THAT(s,
              Contains(Pair("diffusiond_build_info{allocator=\"jemalloc 5.3.0\",cuda=\"true\",torch_version=\"2.1.0\","
                            "version=\"1.2.3\"}",
                            1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_blas_info{chosen_by=\"diffusiond\",core=\"Cooperlake\",fallback=\"false\","
                               "library=\"OpenBLAS 0.3.21\"}",
                               1)));
}

TEST(DaemonMetrics, CountsEachCacheEventAndClassifiesFailedLoads) {
  DaemonMetrics metrics(test_build(), nullptr);
  CacheEvent loaded;
  loaded.kind = CacheEvent::Kind::kLoaded;
  loaded.key = "m";
  loaded.duration = absl::Seconds(3);
  loaded.bytes[kCpuIndex] = 1000;
  loaded.bytes[kCudaIndex] = 24;
  metrics.on_cache_event(loaded);
  metrics.on_cache_event(loaded);
  metrics.on_cache_event(load_failed(absl::ResourceExhaustedError("no room")));
  metrics.on_cache_event(load_failed(absl::CancelledError("client went away")));
  metrics.on_cache_event(load_failed(absl::DataLossError("truncated checkpoint")));
  metrics.on_cache_event(load_failed(absl::NotFoundError("no such file")));
  CacheEvent evicted;
  evicted.kind = CacheEvent::Kind::kEvicted;
  metrics.on_cache_event(evicted);
  CacheEvent unloaded;
  unloaded.kind = CacheEvent::Kind::kUnloaded;
  metrics.on_cache_event(unloaded);
  metrics.on_cache_event(unloaded);
  CacheEvent rejected;
  rejected.kind = CacheEvent::Kind::kRejected;
  rejected.status = absl::ResourceExhaustedError("cannot make room");
  metrics.on_cache_event(rejected);

  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_loads_total{result=\"ok\"}", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_loads_total{result=\"rejected\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_loads_total{result=\"cancelled\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_loads_total{result=\"error\"}", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_evictions_total", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_unloads_total", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_admission_rejections_total", 1)));
  // Only successful loads are timed.
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_load_seconds_count", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_load_seconds_sum", 6)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_load_seconds_bucket{le=\"2.5\"}", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_load_seconds_bucket{le=\"5\"}", 2)));
  // The bytes of successful loads only, on every device.
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_load_bytes_total", 2048)));
}

TEST(DaemonMetrics, CountsTheVramTiersEventsApartAndKeepsTheModelsSeries) {
  DaemonMetrics metrics(test_build(), nullptr);
  load(metrics, "m");
  metrics.observe_step("m", absl::Milliseconds(20));
  CacheObserver* vram = metrics.vram_observer();
  CacheEvent placed;
  placed.kind = CacheEvent::Kind::kLoaded;
  placed.key = "m";
  placed.bytes = {0, 500};
  vram->on_cache_event(placed);
  vram->on_cache_event(placed);
  CacheEvent evicted = placed;
  evicted.kind = CacheEvent::Kind::kEvicted;
  vram->on_cache_event(evicted);
  CacheEvent rejected;
  rejected.kind = CacheEvent::Kind::kRejected;
  rejected.device = Device::kCuda;
  rejected.status = absl::ResourceExhaustedError("cannot make room");
  vram->on_cache_event(rejected);
  CacheEvent dropped = placed;
  dropped.kind = CacheEvent::Kind::kUnloaded;
  vram->on_cache_event(dropped);

  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_vram_placements_total", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_vram_evictions_total", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_vram_rejections_total", 1)));
  // The RAM cache's counters did not move past its one load, and the model
  // (still loaded in RAM) keeps its step series.
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_loads_total{result=\"ok\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_evictions_total", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_unloads_total", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_admission_rejections_total", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_denoise_step_seconds_count{model=\"m\"}", 1)));
}

TEST(DaemonMetrics, ReportsPlacementsStreamedBytesAtScrapeTime) {
  std::vector<PlacementFigures> placed = {{"a", 0}, {"b", 4096}};
  DaemonMetrics metrics(test_build(), nullptr, [&] { return placed; });
  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_vram_step_streamed_bytes{model=\"a\"}", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_model_vram_step_streamed_bytes{model=\"b\"}", 4096)));
  placed.clear();  // evicted to RAM, or unloaded: the series go with them
  s = parse_samples(metrics.scrape_text());
  for (const auto& [series, value] : s) {
    EXPECT_THAT(series, Not(StartsWith("diffusiond_model_vram_step_streamed_bytes")));
  }
}

TEST(DaemonMetrics, HistogramsAndCountersCountObservations) {
  DaemonMetrics metrics(test_build(), nullptr);
  load(metrics, "m");
  load(metrics, "n");
  metrics.observe_step("m", absl::Milliseconds(20));
  metrics.observe_step("m", absl::Milliseconds(40));
  metrics.observe_step("n", absl::Seconds(2));
  metrics.observe_denoise("m", "ok", absl::Seconds(12));
  metrics.observe_denoise("m", "cancelled", absl::Seconds(1));
  metrics.count_cancellation("denoise");
  metrics.count_cancellation("denoise");
  metrics.count_queue_rejection("load");

  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_denoise_step_seconds_count{model=\"m\"}", 2)));
  EXPECT_THAT(
      s, Contains(Pair("diffusiond_denoise_step_seconds_bucket{model=\"m\",le=\"0.025\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_denoise_step_seconds_count{model=\"n\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_denoise_seconds_count{model=\"m\",result=\"ok\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_denoise_seconds_sum{model=\"m\",result=\"ok\"}", 12)));
  EXPECT_THAT(
      s, Contains(Pair("diffusiond_denoise_seconds_count{model=\"m\",result=\"cancelled\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_cancellations_total{operation=\"denoise\"}", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_cancellations_total{operation=\"load\"}", 0)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_queue_rejections_total{queue=\"load\"}", 1)));
}

TEST(DaemonMetrics, CountsCallsGenerateStagesAndReadiness) {
  DaemonMetrics metrics(test_build(), nullptr);
  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_ready", 0)));  // until the daemon says so
  for (const char* stage : {"load", "encode", "denoise", "decode"}) {
    EXPECT_THAT(s, Contains(Pair(absl::StrCat("diffusiond_generate_stage_seconds_count{stage=\"", stage, "\"}"), 0)));
  }

  metrics.set_ready(true);
  metrics.observe_rpc("diffusiond.v1.ModelService", "LoadModel", "OK", absl::Milliseconds(300));
  metrics.observe_rpc("diffusiond.v1.ModelService", "LoadModel", "RESOURCE_EXHAUSTED", absl::Milliseconds(2));
  metrics.observe_rpc("diffusiond.v1.ModelService", "LoadModel", "OK", absl::Seconds(2));
  metrics.observe_generate_stage("denoise", absl::Milliseconds(40));
  metrics.observe_generate_stage("decode", absl::Seconds(3));
  metrics.count_generate_stage_device("denoise", "sim");
  metrics.count_generate_stage_device("denoise", "sim");
  metrics.count_generate_stage_device("decode", "cpu");
  s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_generate_stage_runs_total{device=\"sim\",stage=\"denoise\"}", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_generate_stage_runs_total{device=\"cpu\",stage=\"decode\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_ready", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_grpc_requests_total{code=\"OK\",method=\"LoadModel\","
                               "service=\"diffusiond.v1.ModelService\"}",
                               2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_grpc_requests_total{code=\"RESOURCE_EXHAUSTED\",method=\"LoadModel\","
                               "service=\"diffusiond.v1.ModelService\"}",
                               1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_grpc_request_seconds_count{method=\"LoadModel\","
                               "service=\"diffusiond.v1.ModelService\"}",
                               3)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_grpc_request_seconds_bucket{method=\"LoadModel\","
                               "service=\"diffusiond.v1.ModelService\",le=\"1\"}",
                               2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_generate_stage_seconds_bucket{stage=\"denoise\",le=\"0.05\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_generate_stage_seconds_sum{stage=\"decode\"}", 3)));
  metrics.set_ready(false);  // draining
  EXPECT_THAT(parse_samples(metrics.scrape_text()), Contains(Pair("diffusiond_ready", 0)));
}

TEST(DaemonMetrics, CountsAuthRefusalsByReasonAndReloadsByResult) {
  DaemonMetrics metrics(test_build(), nullptr);
  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  for (const char* reason : kAuthDenialReasons) {
    EXPECT_THAT(s, Contains(Pair(absl::StrCat("diffusiond_auth_denied_total{reason=\"", reason, "\"}"), 0)));
  }
  EXPECT_THAT(s, Contains(Pair("diffusiond_auth_reloads_total{result=\"ok\"}", 0)));
  metrics.count_auth_denial("unknown_token");
  metrics.count_auth_denial("unknown_token");
  metrics.count_auth_denial("role");
  metrics.count_auth_reload(false);
  s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_auth_denied_total{reason=\"unknown_token\"}", 2)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_auth_denied_total{reason=\"role\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_auth_reloads_total{result=\"error\"}", 1)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_auth_reloads_total{result=\"ok\"}", 0)));
}

TEST(DaemonMetrics, ReportsQueuesAndTheMemoryLimitAtScrapeTime) {
  std::vector<QueueFigures> queues = {{"compute", 1, 3, 1, 8}};
  DaemonMetrics metrics(test_build(), nullptr, nullptr, [&] { return queues; });
  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("diffusiond_queue_waiting_tasks{queue=\"compute\"}", 3)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_queue_capacity_tasks{queue=\"compute\"}", 8)));
  EXPECT_THAT(s, Contains(Pair("diffusiond_memory_limit_bytes{device=\"cpu\"}", Gt(0))));
  queues.clear();  // drained: the queues are gone
  for (const auto& [series, value] : parse_samples(metrics.scrape_text())) {
    EXPECT_THAT(series, Not(StartsWith("diffusiond_queue_waiting_tasks")));
  }
}

TEST(DaemonMetrics, ReportsProcessFiguresFromProc) {
  DaemonMetrics metrics(test_build(), nullptr);
  std::map<std::string, double> s = parse_samples(metrics.scrape_text());
  EXPECT_THAT(s, Contains(Pair("process_resident_memory_bytes", Gt(0))));
  EXPECT_THAT(s, Contains(Pair("process_virtual_memory_bytes", Gt(0))));
  EXPECT_THAT(s, Contains(Pair("process_open_fds", Gt(0))));
  EXPECT_THAT(s, Contains(Pair("process_threads", Gt(0))));
  EXPECT_THAT(s, Contains(Pair("process_start_time_seconds", Gt(1e9))));
  EXPECT_THAT(s, Contains(Key("process_cpu_seconds_total")));
}

// Sends a plain HTTP/1.0 GET to 127.0.0.1:`port` and returns the whole
// response, headers included; empty on a socket error.
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  // A hung server fails the test instead of hanging it.
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: localhost\r\n\r\n");
    if (::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n = 0;
      while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
    }
  }
  ::close(fd);
  return response;
}

TEST(MetricsServer, ServesMetricsOverHttpOnAPickedPort) {
  FakeCacheStats fake;
  CacheStats stats;
  stats.budgets = {budget(Device::kCpu, 1000, 0, 0, 0)};
  fake.set(stats);
  DaemonMetrics metrics(test_build(), fake.source());
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::start("127.0.0.1:0", metrics);
  ASSERT_THAT(server, IsOk());
  const int port = (*server)->port();
  ASSERT_GT(port, 0);

  const std::string response = http_get(port, "/metrics");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(response, HasSubstr("\nprocess_resident_memory_bytes "));
  EXPECT_THAT(response, HasSubstr("\ndiffusiond_memory_budget_bytes{device=\"cpu\"} 1000"));
  EXPECT_THAT(response, HasSubstr("\ndiffusiond_model_loads_total{result=\"ok\"} 0"));
}

TEST(MetricsServer, AddressInUseIsUnavailable) {
  DaemonMetrics metrics(test_build(), nullptr);
  absl::StatusOr<std::unique_ptr<MetricsServer>> first =
      MetricsServer::start("127.0.0.1:0", metrics);
  ASSERT_THAT(first, IsOk());
  const std::string address = absl::StrCat("127.0.0.1:", (*first)->port());
  EXPECT_THAT(MetricsServer::start(address, metrics),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(address)));
}

TEST(DaemonMetrics, ScrapeTextPassesPromtoolCheckMetrics) {
  const testing::CommandOutput which = testing::run_command("command -v promtool");
  if (which.exit_status != 0 || which.lines.empty()) GTEST_SKIP() << "promtool not installed";

  FakeCacheStats fake;
  CacheStats stats;
  stats.budgets = {budget(Device::kCpu, 1000, 100, 600, 800),
                   budget(Device::kCuda, 4000, 0, 500, 900)};
  // A key a label value must escape.
  stats.entries = {entry("models/a \"b\"\\c.safetensors", 100, 500, 1)};
  fake.set(stats);
  DaemonMetrics metrics(
      test_build(), fake.source(),
      [] {
        return std::vector<PlacementFigures>{{"models/a \"b\"\\c.safetensors", 4096}};
      },
      [] {
        return std::vector<QueueFigures>{{"load", 0, 0, 2, 32}, {"compute", 1, 2, 1, 8}};
      });
  CacheEvent loaded;
  loaded.kind = CacheEvent::Kind::kLoaded;
  loaded.duration = absl::Seconds(1);
  metrics.on_cache_event(loaded);
  metrics.vram_observer()->on_cache_event(loaded);
  load(metrics, "m");
  metrics.observe_step("m", absl::Milliseconds(20));
  metrics.observe_denoise("m", "ok", absl::Seconds(12));
  metrics.observe_rpc("diffusiond.v1.DenoiseService", "Step", "NOT_FOUND", absl::Milliseconds(1));
  metrics.observe_generate_stage("encode", absl::Seconds(1));
  metrics.count_generate_stage_device("encode", "cuda:0");
  metrics.set_ready(true);

  testing::TempDir dir;
  const std::string path = dir.write("metrics.txt", metrics.scrape_text());
  const testing::CommandOutput check = testing::run_command(
      absl::StrCat("'", which.lines[0], "' check metrics < '", path, "' 2>&1"));
  EXPECT_EQ(check.exit_status, 0);
  EXPECT_THAT(check.lines, ::testing::IsEmpty());
}

}  // namespace
}  // namespace diffusiond
