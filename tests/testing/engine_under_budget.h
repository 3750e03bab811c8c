// Starting an Engine under a RAM budget of its own, as most engine and
// pipeline tests do, and again with another capacity.
#ifndef DIFFUSIOND_TESTS_TESTING_ENGINE_UNDER_BUDGET_H_
#define DIFFUSIOND_TESTS_TESTING_ENGINE_UNDER_BUDGET_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "core/engine/engine.h"
#include "core/memory/budget.h"
#include "core/util/status_macros.h"

namespace diffusiond::testing {

// (Re)creates `*engine` from `options` (models_dir and whatever hooks the
// test sets) under a fresh RAM budget `*ram` of `capacity` bytes. The old
// engine goes first: it holds the old budget.
inline absl::Status start_engine(EngineOptions options, int64_t capacity, std::unique_ptr<Budget>* ram,
                                 std::unique_ptr<Engine>* engine) {
  engine->reset();
  *ram = std::make_unique<Budget>(Device::kCpu, capacity);
  options.ram_budget = ram->get();
  DIFFUSIOND_ASSIGN_OR_RETURN(*engine, Engine::create(options));
  return absl::OkStatus();
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_ENGINE_UNDER_BUDGET_H_
