// PlacementCollector: the diffusiond_model_vram_* series of each model
// placed on the device (--device cuda:N or sim), read from a source at each
// scrape, so a model's series vanish the moment its placement is evicted
// to RAM or dropped with the model. Their number is bounded as the
// resident-bytes series are: by the models the budgets hold at once.
//
// Not here: the VRAM budget and each placement's resident bytes, which are
// the device="cuda" series of cache_stats_collector.h.
#ifndef DIFFUSIOND_SERVER_PLACEMENT_COLLECTOR_H_
#define DIFFUSIOND_SERVER_PLACEMENT_COLLECTOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace diffusiond {

// One placed model, as the engine's ModelInfo describes it.
struct PlacementFigures {
  std::string model;
  // Weights copied to the device per forward because they are not resident
  // (0 when the whole model is).
  int64_t streamed_bytes_per_step = 0;
};

// Thread-safe if `source` is: each scrape calls it once.
class PlacementCollector final : public prometheus::Collectable {
 public:
  // `source` returns the placements now; an empty function reports nothing.
  explicit PlacementCollector(std::function<std::vector<PlacementFigures>()> source)
      : source_(std::move(source)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

  // Returns the families describing `placements`.
  static std::vector<prometheus::MetricFamily> families(const std::vector<PlacementFigures>& placements);

 private:
  const std::function<std::vector<PlacementFigures>()> source_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_PLACEMENT_COLLECTOR_H_
