#include "server/placement_collector.h"

#include <utility>

#include "server/internal/metric_family.h"

namespace diffusiond {

std::vector<prometheus::MetricFamily> PlacementCollector::Collect() const {
  if (!source_) return {};
  return families(source_());
}

std::vector<prometheus::MetricFamily> PlacementCollector::families(const std::vector<PlacementFigures>& placements) {
  prometheus::MetricFamily streamed = internal::make_family(
      "diffusiond_model_vram_step_streamed_bytes",
      "Bytes of a placed model's weights copied to the device in each forward because they are not "
      "resident (0 when all are).",
      prometheus::MetricType::Gauge);
  for (const PlacementFigures& p : placements) {
    internal::add_sample(&streamed, static_cast<double>(p.streamed_bytes_per_step), {{"model", p.model}});
  }
  std::vector<prometheus::MetricFamily> out;
  internal::append_nonempty({std::move(streamed)}, &out);
  return out;
}

}  // namespace diffusiond
