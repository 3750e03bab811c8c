#include "core/models/activation_estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/bytes.h"

namespace diffusiond {
namespace {

int64_t saturated(double bytes) {
  constexpr double kMax = static_cast<double>(std::numeric_limits<int64_t>::max());
  if (!(bytes < kMax)) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::ceil(std::max(bytes, 0.0)));
}

// "1.25 GiB", "577.5 MiB", "12 KiB": short enough for a term of a
// breakdown (the total is given exactly).
std::string short_bytes(double bytes) {
  if (bytes >= static_cast<double>(kGiB)) return absl::StrFormat("%.2f GiB", bytes / static_cast<double>(kGiB));
  if (bytes >= static_cast<double>(kMiB)) return absl::StrFormat("%.1f MiB", bytes / static_cast<double>(kMiB));
  return absl::StrFormat("%.0f KiB", std::ceil(bytes / static_cast<double>(kKiB)));
}

}  // namespace

void ActivationTally::add(absl::string_view what, double bytes) {
  if (bytes <= 0) return;
  bytes_ += bytes;
  absl::StrAppend(&breakdown_, first_ ? ": " : ", ", what, " ", short_bytes(bytes));
  first_ = false;
}

ActivationEstimate ActivationTally::finish() const { return {saturated(bytes_), breakdown_}; }

ActivationEstimate ActivationTally::finish_with_allocator_slack() {
  add("allocator slack", static_cast<double>(activation_allocator_slack_bytes(static_cast<double>(finish().bytes))));
  return finish();
}

int64_t largest_materialized_weight_bytes(const WeightStore& weights, torch::ScalarType dtype) {
  const int64_t element = static_cast<int64_t>(torch::elementSize(dtype));
  int64_t largest = 0;
  for (const std::string& name : weights.names()) {
    int64_t numel = 0;
    if (const Fp8Weight* f = weights.fp8(name)) {
      numel = f->codes.numel();
    } else if (const torch::Tensor* t = weights.dense(name); t != nullptr && t->scalar_type() != dtype) {
      numel = t->numel();
    }
    largest = std::max(largest, numel * element);
  }
  return largest;
}

int64_t activation_allocator_slack_bytes(double tensor_bytes) {
  return saturated(8.0 * static_cast<double>(kMiB) + tensor_bytes / 10);
}

LatentGrid latent_grid_of(const std::vector<int64_t>& shape) {
  LatentGrid g;
  if (shape.size() == 3) g = {shape[0], 1, shape[1], shape[2]};
  if (shape.size() == 4) g = {shape[0], shape[1], shape[2], shape[3]};
  return g;
}

std::optional<ActivationQuery> packed_step_activation_query(const NamedTensors& inputs, int64_t text_rank,
                                                            torch::ScalarType dtype) {
  return hidden_states_step_activation_query(inputs, 3, text_rank, dtype);
}

std::optional<ActivationQuery> hidden_states_step_activation_query(const NamedTensors& inputs, int64_t latent_rank,
                                                                   int64_t text_rank, torch::ScalarType dtype) {
  const auto x = inputs.find("hidden_states");
  const auto text = inputs.find("encoder_hidden_states");
  if (x == inputs.end() || x->second.dim() != latent_rank || text == inputs.end() ||
      text->second.dim() != text_rank) {
    return std::nullopt;
  }
  ActivationQuery q;
  q.latent_shape = x->second.sizes().slice(1).vec();
  q.batch = x->second.size(0);
  q.text_tokens = text->second.size(1);
  q.compute_dtype = dtype;
  return q;
}

}  // namespace diffusiond
