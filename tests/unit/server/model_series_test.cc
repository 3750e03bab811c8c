// Series labelled with a model id are bounded: removed when the model is
// evicted or unloaded, and capped in number with the rest under "other".
#include "server/model_series.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "core/cache/cache_observer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "server/metrics.h"

namespace diffusiond {
namespace {

using ::testing::HasSubstr;

CacheEvent event(CacheEvent::Kind kind, const std::string& key) {
  CacheEvent e;
  e.kind = kind;
  e.key = key;
  return e;
}

// The distinct values of the model label in `text`.
std::set<std::string> model_labels(const std::string& text) {
  std::set<std::string> labels;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t at = line.find("model=\"");
    if (at == absl::string_view::npos) continue;
    const absl::string_view rest = line.substr(at + 7);
    labels.insert(std::string(rest.substr(0, rest.find('"'))));
  }
  return labels;
}

TEST(ModelSeries, ExpositionReturnsToItsBaselineAfterManyLoadsAndUnloads) {
  DaemonMetrics metrics(BuildInfo{"test", "1.13", false, 1, "glibc"}, nullptr);
  const std::string before = metrics.scrape_text();
  const size_t baseline = before.size();
  const auto baseline_lines = std::count(before.begin(), before.end(), '\n');
  for (int i = 0; i < 300; ++i) {
    const std::string id = absl::StrCat("model-", i);
    metrics.on_cache_event(event(CacheEvent::Kind::kLoaded, id));
    metrics.observe_step(id, absl::Milliseconds(20));
    metrics.observe_denoise(id, i % 2 ? "ok" : "cancelled", absl::Seconds(1));
    metrics.on_cache_event(event(i % 3 ? CacheEvent::Kind::kUnloaded : CacheEvent::Kind::kEvicted, id));
  }
  const std::string after = metrics.scrape_text();
  EXPECT_THAT(model_labels(after), ::testing::IsEmpty());
  // The same series as before; only counters' digits grew.
  EXPECT_EQ(std::count(after.begin(), after.end(), '\n'), baseline_lines);
  EXPECT_LE(after.size(), baseline + 256);
}

TEST(ModelSeries, DistinctModelLabelsAreCappedWithTheRestUnderOther) {
  DaemonMetrics metrics(BuildInfo{"test", "1.13", false, 1, "glibc"}, nullptr);
  for (size_t i = 0; i < 3 * ModelSeries::kMaxModels; ++i) {
    metrics.on_cache_event(event(CacheEvent::Kind::kLoaded, absl::StrCat("m", i)));
    metrics.observe_step(absl::StrCat("m", i), absl::Milliseconds(5));
  }
  const std::string text = metrics.scrape_text();
  const std::set<std::string> labels = model_labels(text);
  EXPECT_EQ(labels.size(), ModelSeries::kMaxModels + 1);
  EXPECT_EQ(labels.count("other"), 1u);
  EXPECT_THAT(text, HasSubstr(absl::StrCat("diffusiond_denoise_step_seconds_count{model=\"other\"} ",
                                           2 * ModelSeries::kMaxModels)));
  // Unloading a tracked model frees its place for the next id.
  metrics.on_cache_event(event(CacheEvent::Kind::kUnloaded, "m0"));
  metrics.on_cache_event(event(CacheEvent::Kind::kLoaded, "fresh"));
  metrics.observe_step("fresh", absl::Milliseconds(5));
  EXPECT_EQ(model_labels(metrics.scrape_text()).count("fresh"), 1u);
}

TEST(ModelSeries, AModelNamedOtherSharesTheAggregateAndForgettingIsIdempotent) {
  prometheus::Registry registry;
  auto& step = prometheus::BuildHistogram().Name("s").Help("s").Register(registry);
  auto& denoise = prometheus::BuildHistogram().Name("d").Help("d").Register(registry);
  ModelSeries series(&step, &denoise);
  series.loaded("other");
  series.loaded("a");
  series.observe_step("other", 1.0);
  series.observe_step("a", 1.0);
  EXPECT_EQ(series.tracked_models_for_test(), 1u);
  series.forget("a");
  EXPECT_EQ(series.tracked_models_for_test(), 0u);
}

// A Step releases its model's pin before its time is observed, so an unload
// can come in between; the late observation must not bring the series back.
TEST(ModelSeries, AnObservationAfterTheModelLeftTheCacheIsDropped) {
  DaemonMetrics metrics(BuildInfo{"test", "1.13", false, 1, "glibc"}, nullptr);
  metrics.on_cache_event(event(CacheEvent::Kind::kLoaded, "late"));
  metrics.observe_step("late", absl::Milliseconds(5));
  EXPECT_EQ(model_labels(metrics.scrape_text()).count("late"), 1u);
  metrics.on_cache_event(event(CacheEvent::Kind::kUnloaded, "late"));
  metrics.observe_step("late", absl::Milliseconds(5));
  metrics.observe_denoise("late", "ok", absl::Seconds(1));
  metrics.observe_step("never-loaded", absl::Milliseconds(5));
  EXPECT_THAT(model_labels(metrics.scrape_text()), ::testing::IsEmpty());
}

// Cache events arrive after the cache's lock is released, so a reload's
// kLoaded may come before the kEvicted of the copy it replaced.
TEST(ModelSeries, AReloadWhoseEventOvertakesTheEvictionKeepsItsSeries) {
  DaemonMetrics metrics(BuildInfo{"test", "1.13", false, 1, "glibc"}, nullptr);
  metrics.on_cache_event(event(CacheEvent::Kind::kLoaded, "m"));
  metrics.on_cache_event(event(CacheEvent::Kind::kLoaded, "m"));  // the reload
  metrics.on_cache_event(event(CacheEvent::Kind::kEvicted, "m"));  // the first copy
  metrics.observe_step("m", absl::Milliseconds(5));
  EXPECT_EQ(model_labels(metrics.scrape_text()).count("m"), 1u);
  // An unload whose event overtakes its load's: the model is gone.
  metrics.on_cache_event(event(CacheEvent::Kind::kUnloaded, "m"));
  metrics.on_cache_event(event(CacheEvent::Kind::kUnloaded, "n"));
  metrics.on_cache_event(event(CacheEvent::Kind::kLoaded, "n"));
  metrics.observe_step("n", absl::Milliseconds(5));
  EXPECT_THAT(model_labels(metrics.scrape_text()), ::testing::IsEmpty());
}

}  // namespace
}  // namespace diffusiond
