// Loading a model through a real ModelCache for tests: the budget, cache,
// checkpoint and pin kept together so they outlive each other correctly.
#ifndef DIFFUSIOND_TESTS_TESTING_LOADED_MODEL_H_
#define DIFFUSIOND_TESTS_TESTING_LOADED_MODEL_H_

#include <memory>
#include <string>
#include <utility>

#include "core/engine/model_admission.h"
#include "core/models/model_loader.h"
#include "core/models/z_image/z_image_model.h"
#include "gtest/gtest.h"

namespace diffusiond::testing {

// Member order matters for teardown: the pin goes before the cache, the
// cache before its budget.
struct LoadedModel {
  std::unique_ptr<Budget> ram;
  std::unique_ptr<ModelCache> cache;
  std::unique_ptr<Checkpoint> checkpoint;
  Pin pin;
  const ZImageModel* model = nullptr;  // set when the model is a Z-Image

  LoadedModel() = default;
  LoadedModel(LoadedModel&&) = default;
  // Releases what it holds in teardown order first: a member-wise move
  // would replace the budget while the old cache still holds reservations.
  LoadedModel& operator=(LoadedModel&& other) noexcept {
    if (this == &other) return *this;
    model = nullptr;
    pin = Pin();
    checkpoint.reset();
    cache.reset();
    ram = std::move(other.ram);
    cache = std::move(other.cache);
    checkpoint = std::move(other.checkpoint);
    pin = std::move(other.pin);
    model = std::exchange(other.model, nullptr);
    return *this;
  }

  // The model as a `T`, or null (also when the load failed).
  template <typename T>
  const T* get() const {
    return pin ? dynamic_cast<const T*>(&pin.as<diffusiond::LoadedModel>()->model()) : nullptr;
  }
};

// Loads `path` under a 1 GiB budget, with the config.json at `config_path`
// when not empty; failures are test failures and leave `model` null.
inline LoadedModel load_test_model(const std::string& path, const ModelLoadOptions& options,
                                   const std::string& config_path = "") {
  LoadedModel l;
  l.ram = std::make_unique<Budget>(Device::kCpu, int64_t{1} << 30);
  ModelCacheOptions co;
  co.ram_budget = l.ram.get();
  l.cache = std::move(*ModelCache::create(co));
  OpenOptions open;
  open.config_path = config_path;
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(path, open);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status();
  if (!ckpt.ok()) return l;
  l.checkpoint = std::move(*ckpt);
  absl::StatusOr<Pin> pin =
      l.cache->get_or_load("model", [&] { return load_model(*l.checkpoint, options, *l.cache); });
  EXPECT_TRUE(pin.ok()) << pin.status();
  if (!pin.ok()) return l;
  l.pin = std::move(*pin);
  l.model = dynamic_cast<const ZImageModel*>(&l.pin.as<diffusiond::LoadedModel>()->model());
  return l;
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_LOADED_MODEL_H_
