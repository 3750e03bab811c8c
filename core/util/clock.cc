#include "core/util/clock.h"

#include "absl/time/clock.h"

namespace diffusiond {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time now() override { return absl::Now(); }
};

}  // namespace

Clock* real_clock() {
  // Leaked on purpose: statics must be trivially destructible, and the clock
  // must outlive every component that may still read it during shutdown.
  static Clock* const clock = new RealClock();
  return clock;
}

}  // namespace diffusiond
