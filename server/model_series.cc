#include "server/model_series.h"

#include <vector>

namespace diffusiond {
namespace {

using prometheus::Histogram;

const Histogram::BucketBoundaries& step_buckets() {
  static const auto* const kBuckets = new Histogram::BucketBoundaries{
      0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  return *kBuckets;
}
const Histogram::BucketBoundaries& denoise_buckets() {
  static const auto* const kBuckets =
      new Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 600, 1800};
  return *kBuckets;
}

}  // namespace

ModelSeries::ModelSeries(prometheus::Family<Histogram>* step, prometheus::Family<Histogram>* denoise)
    : step_(step), denoise_(denoise) {}

ModelSeries::Series* ModelSeries::series_for(absl::string_view model, std::string* label) {
  const auto held = held_.find(model);
  if (held == held_.end() || held->second <= 0) return nullptr;
  auto it = models_.find(model);
  if (it == models_.end() && models_.size() < kMaxModels && model != kOtherModel) {
    it = models_.emplace(std::string(model), Series{}).first;
  }
  if (it == models_.end()) {
    *label = std::string(kOtherModel);
    return &other_;
  }
  *label = it->first;
  return &it->second;
}

void ModelSeries::loaded(absl::string_view model) {
  MutexLock lock(&mu_);
  auto it = held_.try_emplace(std::string(model), 0).first;
  if (++it->second == 0) held_.erase(it);
}

void ModelSeries::observe_step(absl::string_view model, double seconds) {
  MutexLock lock(&mu_);
  std::string label;
  Series* s = series_for(model, &label);
  if (s == nullptr) return;
  if (s->step == nullptr) s->step = &step_->Add({{"model", label}}, step_buckets());
  s->step->Observe(seconds);
}

void ModelSeries::observe_denoise(absl::string_view model, absl::string_view result, double seconds) {
  MutexLock lock(&mu_);
  std::string label;
  Series* s = series_for(model, &label);
  if (s == nullptr) return;
  auto it = s->denoise.find(result);
  if (it == s->denoise.end()) {
    Histogram* h = &denoise_->Add({{"model", label}, {"result", std::string(result)}}, denoise_buckets());
    it = s->denoise.emplace(std::string(result), h).first;
  }
  it->second->Observe(seconds);
}

void ModelSeries::forget(absl::string_view model) {
  MutexLock lock(&mu_);
  auto held = held_.try_emplace(std::string(model), 0).first;
  const int loads_left = --held->second;
  if (loads_left == 0) held_.erase(held);
  if (loads_left > 0) return;  // a later load of the same id is still in the cache
  auto it = models_.find(model);
  if (it == models_.end()) return;
  if (it->second.step != nullptr) step_->Remove(it->second.step);
  for (const auto& [result, h] : it->second.denoise) denoise_->Remove(h);
  models_.erase(it);
}

size_t ModelSeries::tracked_models_for_test() const {
  MutexLock lock(&mu_);
  return models_.size();
}

}  // namespace diffusiond
