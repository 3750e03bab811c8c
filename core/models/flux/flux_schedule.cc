#include "core/models/flux/flux_schedule.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

absl::Status field_error(absl::string_view what, absl::string_view field, const json& value,
                         absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": field '", field, "' is ", value.dump(),
                                                 ", expected ", expected));
}

}  // namespace

absl::StatusOr<FluxSchedulerConfig> parse_flux_scheduler_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(json root, parse_json_strict(text, what));
  if (!root.is_object()) return absl::InvalidArgumentError(absl::StrCat(what, ": not a JSON object"));
  FluxSchedulerConfig c;
  const auto present = [&](const char* field) { return root.contains(field) && !root.at(field).is_null(); };
  if (present("use_dynamic_shifting")) {
    if (!root.at("use_dynamic_shifting").is_boolean()) {
      return field_error(what, "use_dynamic_shifting", root.at("use_dynamic_shifting"), "a boolean");
    }
    c.use_dynamic_shifting = root.at("use_dynamic_shifting").get<bool>();
  }
  for (auto [field, out] : {std::pair<const char*, double*>{"shift", &c.shift},
                            {"base_shift", &c.base_shift},
                            {"max_shift", &c.max_shift}}) {
    if (!present(field)) continue;
    if (!root.at(field).is_number()) return field_error(what, field, root.at(field), "a number");
    *out = root.at(field).get<double>();
  }
  for (auto [field, out] : {std::pair<const char*, int64_t*>{"base_image_seq_len", &c.base_image_seq_len},
                            {"max_image_seq_len", &c.max_image_seq_len}}) {
    if (!present(field)) continue;
    if (!root.at(field).is_number_integer()) return field_error(what, field, root.at(field), "an integer");
    *out = root.at(field).get<int64_t>();
  }
  if (present("num_train_timesteps") && root.at("num_train_timesteps") != json(1000)) {
    return field_error(what, "num_train_timesteps", root.at("num_train_timesteps"), "1000");
  }
  for (const char* field : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "invert_sigmas",
                            "stochastic_sampling"}) {
    if (present(field) && root.at(field) != json(false)) return field_error(what, field, root.at(field), "false");
  }
  if (present("shift_terminal")) return field_error(what, "shift_terminal", root.at("shift_terminal"), "null");
  if (present("time_shift_type") && root.at("time_shift_type") != json("exponential")) {
    return field_error(what, "time_shift_type", root.at("time_shift_type"), "\"exponential\"");
  }
  if (c.use_dynamic_shifting && c.max_image_seq_len == c.base_image_seq_len) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": base_image_seq_len and max_image_seq_len are both ",
                                                   c.base_image_seq_len, "; mu needs two points"));
  }
  return c;
}

double flux_mu(const FluxSchedulerConfig& c, int64_t image_seq_len) {
  const double m = (c.max_shift - c.base_shift) / static_cast<double>(c.max_image_seq_len - c.base_image_seq_len);
  const double b = c.base_shift - m * static_cast<double>(c.base_image_seq_len);
  return static_cast<double>(image_seq_len) * m + b;
}

absl::StatusOr<Schedule> flux_schedule(const FluxSchedulerConfig& c, int steps, int64_t image_seq_len) {
  if (steps < 1 || steps > 1000) {
    return absl::InvalidArgumentError(absl::StrCat("steps is ", steps, ", expected 1 to 1000"));
  }
  if (!c.use_dynamic_shifting && !(c.shift > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat("shift is ", c.shift, ", expected > 0"));
  }
  // numpy's linspace in float64, rounded to float32; the shift in float32
  // with the float64 constants rounded first, as numpy computes it.
  ScheduleOptions options;
  const float e = static_cast<float>(std::exp(flux_mu(c, image_seq_len)));
  const float shift = static_cast<float>(c.shift);
  const double stop = 1.0 / steps, delta = steps == 1 ? 0.0 : (stop - 1.0) / (steps - 1);
  for (int i = 0; i < steps; ++i) {
    const float s = static_cast<float>(i == steps - 1 ? stop : i * delta + 1.0);
    options.sigmas.push_back(c.use_dynamic_shifting ? e / (e + (1.0f / s - 1.0f))
                                                    : shift * s / (1.0f + (shift - 1.0f) * s));
  }
  return flow_match_schedule(options);
}

float flux_model_time(const Schedule& schedule, int step) { return schedule.timesteps[step] / 1000.0f; }

}  // namespace diffusiond
