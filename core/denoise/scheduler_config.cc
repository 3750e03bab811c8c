#include "core/denoise/scheduler_config.h"

#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/util/file_text.h"
#include "core/util/bounded_text.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// Bounds far beyond any released scheduler (shifts of 0.5 to 3, sequence
// lengths of 256 to 4096) and within what the schedule's float math holds.
constexpr double kMaxShift = 1000.0;
constexpr double kMaxMu = 50.0;  // |base_shift|, |max_shift|: e^mu stays finite in float
constexpr int64_t kMaxSeqLen = int64_t{1} << 30;
// shift_terminal must stay below 1: the stretch divides by 1 − it.
constexpr double kMaxShiftTerminal = 0.999;

// Reads a number field if present into `*out` (an integer field must hold
// an integer); INVALID_ARGUMENT if it is not one or lies outside [lo, hi].
template <typename T>
absl::Status read_number(const nlohmann::json& c, const char* key, absl::string_view path, T lo, T hi,
                         T* out) {
  if (!c.contains(key) || c.at(key).is_null()) return absl::OkStatus();
  constexpr bool kInteger = std::is_integral_v<T>;
  if (kInteger ? !c.at(key).is_number_integer() : !c.at(key).is_number()) {
    return bad_file(path, absl::StrCat("\"", key, "\" must be ", kInteger ? "an integer" : "a number"));
  }
  const T value = c.at(key).get<T>();
  if (!(value >= lo && value <= hi)) {
    return bad_file(path, absl::StrCat("\"", key, "\" is ", c.at(key).dump(), ", expected ", lo, " to ", hi));
  }
  *out = value;
  return absl::OkStatus();
}

// OK when field `key` is absent, null or equals `expected` (what the
// solver implements); INVALID_ARGUMENT naming it otherwise.
template <typename T>
absl::Status require_setting(const nlohmann::json& c, const char* key, absl::string_view path, const T& expected) {
  T value = expected;
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(c, key, path, &value));
  if (value == expected) return absl::OkStatus();
  return bad_file(path, absl::StrCat("\"", key, "\": ", bounded(c.at(key).dump()), " is not supported"));
}

// UniPCMultistepScheduler as the Wan 2.x pipelines are converted with
// (FlowSolver::kUniPc): flow_prediction on flow sigmas, data prediction,
// bh2, order 1 or 2, a static flow_shift.
absl::StatusOr<ScheduleOptions> parse_unipc_config(const nlohmann::json& c, absl::string_view path,
                                                   const ScheduleOptions& defaults) {
  DIFFUSIOND_RETURN_IF_ERROR(require_setting(c, "prediction_type", path, std::string("flow_prediction")));
  DIFFUSIOND_RETURN_IF_ERROR(require_setting(c, "use_flow_sigmas", path, true));
  if (!c.contains("use_flow_sigmas")) return bad_file(path, "UniPC without \"use_flow_sigmas\": true is not supported");
  DIFFUSIOND_RETURN_IF_ERROR(require_setting(c, "solver_type", path, std::string("bh2")));
  DIFFUSIOND_RETURN_IF_ERROR(require_setting(c, "predict_x0", path, true));
  DIFFUSIOND_RETURN_IF_ERROR(require_setting(c, "lower_order_final", path, true));
  DIFFUSIOND_RETURN_IF_ERROR(require_setting(c, "final_sigmas_type", path, std::string("zero")));
  for (const char* flag :
       {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "thresholding", "use_dynamic_shifting"}) {
    DIFFUSIOND_RETURN_IF_ERROR(require_setting(c, flag, path, false));
  }
  if (c.contains("disable_corrector") && !c.at("disable_corrector").is_null() &&
      !(c.at("disable_corrector").is_array() && c.at("disable_corrector").empty())) {
    return bad_file(path, "\"disable_corrector\" other than [] is not supported");
  }
  ScheduleOptions o = defaults;
  o.solver = FlowSolver::kUniPc;
  o.dynamic_shift = false;
  o.float64_linspace = true;
  o.shift = 1.0;  // upstream's default flow_shift
  DIFFUSIOND_RETURN_IF_ERROR(read_number(c, "flow_shift", path, -kMaxShift, kMaxShift, &o.shift));
  if (!(o.shift > 0)) return bad_file(path, absl::StrCat("flow_shift is ", o.shift, ", expected > 0"));
  DIFFUSIOND_RETURN_IF_ERROR(read_number(c, "solver_order", path, 1, 2, &o.solver_order));
  return o;
}

}  // namespace

absl::StatusOr<ScheduleOptions> parse_scheduler_config(absl::string_view json, absl::string_view path,
                                                       const ScheduleOptions& defaults) {
  DIFFUSIOND_ASSIGN_OR_RETURN(nlohmann::json c, parse_json_strict(json, path));
  if (!c.is_object()) return bad_file(path, "expected a JSON object");
  // Read with type checks: nlohmann's value() throws on a mismatch.
  std::string cls = "FlowMatchEulerDiscreteScheduler";
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(c, "_class_name", path, &cls));
  if (c.contains("num_train_timesteps") &&
      !(c.at("num_train_timesteps").is_number() && c.at("num_train_timesteps").get<double>() == 1000)) {
    return bad_file(path, "num_train_timesteps other than 1000 is not supported");
  }
  if (cls == "UniPCMultistepScheduler") return parse_unipc_config(c, path, defaults);
  if (cls != "FlowMatchEulerDiscreteScheduler") {
    return bad_file(path, absl::StrCat("scheduler \"", bounded(cls),
                                       "\" is not supported (FlowMatchEulerDiscreteScheduler and "
                                       "UniPCMultistepScheduler are)"));
  }
  for (const char* flag : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "invert_sigmas",
                           "stochastic_sampling"}) {
    if (c.contains(flag) && c.at(flag).is_boolean() && c.at(flag).get<bool>()) {
      return bad_file(path, absl::StrCat("\"", flag, "\": true is not supported"));
    }
  }
  std::string time_shift_type = "exponential";
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(c, "time_shift_type", path, &time_shift_type));
  if (time_shift_type != "exponential") {
    return bad_file(path, "only the \"exponential\" time_shift_type is supported");
  }
  // A field the file leaves out, or sets to null, takes upstream's class
  // default, not the model's: from_config fills it so (Qwen-Image-Lightning's
  // scheduler has no shift_terminal, though Qwen-Image's has 0.02).
  ScheduleOptions o = flow_match_euler_defaults();
  // Not the scheduler's to say: the steps, how the pipeline computes its
  // linspace, a mu the pipeline fixes.
  o.steps = defaults.steps;
  o.float64_linspace = defaults.float64_linspace;
  o.mu = defaults.mu;
  // shift's lower end is checked below, with its own message.
  DIFFUSIOND_RETURN_IF_ERROR(read_number(c, "shift", path, -kMaxShift, kMaxShift, &o.shift));
  DIFFUSIOND_RETURN_IF_ERROR(read_number(c, "base_shift", path, -kMaxMu, kMaxMu, &o.base_shift));
  DIFFUSIOND_RETURN_IF_ERROR(read_number(c, "max_shift", path, -kMaxMu, kMaxMu, &o.max_shift));
  DIFFUSIOND_RETURN_IF_ERROR(read_number(c, "base_image_seq_len", path, int64_t{1}, kMaxSeqLen, &o.base_seq_len));
  DIFFUSIOND_RETURN_IF_ERROR(read_number(c, "max_image_seq_len", path, int64_t{1}, kMaxSeqLen, &o.max_seq_len));
  // Upstream treats 0 like null (off); a stretch needs a value below 1.
  DIFFUSIOND_RETURN_IF_ERROR(read_number(c, "shift_terminal", path, 0.0, kMaxShiftTerminal, &o.shift_terminal));
  if (c.contains("use_dynamic_shifting") && !c.at("use_dynamic_shifting").is_null()) {
    if (!c.at("use_dynamic_shifting").is_boolean()) return bad_file(path, "\"use_dynamic_shifting\" must be a boolean");
    o.dynamic_shift = c.at("use_dynamic_shifting").get<bool>();
  }
  if (!(o.shift > 0)) return bad_file(path, absl::StrCat("shift is ", o.shift, ", expected > 0"));
  if (o.dynamic_shift && !(o.max_seq_len > o.base_seq_len)) {
    return bad_file(path, "max_image_seq_len must exceed base_image_seq_len");
  }
  return o;
}

}  // namespace diffusiond
