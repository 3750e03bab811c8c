#include "core/denoise/flow_match_schedule.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// np.linspace(start, stop, n) in float64 (start + i·step, the last value
// exactly `stop`), rounded to float32.
torch::Tensor numpy_linspace(double start, double stop, int n) {
  std::vector<float> values(n);
  const double step = n == 1 ? 0.0 : (stop - start) / (n - 1);
  for (int i = 0; i < n; ++i) values[i] = static_cast<float>(i == n - 1 ? stop : i * step + start);
  return torch::tensor(values, torch::kFloat32);
}

// UniPC's flow sigmas, in float64 until the end as numpy computes them.
std::vector<double> unipc_flow_sigmas(int steps, double shift) {
  std::vector<double> sigmas(steps);
  const double step = (1.0 / 1000.0 - 1.0) / steps;
  for (int i = 0; i < steps; ++i) {
    const double s = 1.0 + i * step;  // np.linspace(1, 1/1000, steps + 1)[:-1]
    sigmas[i] = shift * s / (1.0 + (shift - 1.0) * s);
  }
  if (std::abs(sigmas[0] - 1.0) < 1e-6) sigmas[0] -= 1e-6;
  return sigmas;
}

// Explicit sigmas must decrease strictly within (0, 1].
absl::Status check_explicit_sigmas(const std::vector<float>& sigmas) {
  for (size_t i = 0; i < sigmas.size(); ++i) {
    const float s = sigmas[i];
    if (!(s > 0.0f && s <= 1.0f) || (i > 0 && !(s < sigmas[i - 1]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("sigma ", i, " is ", s, "; explicit sigmas must decrease strictly within (0, 1]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Schedule> flow_match_schedule(const ScheduleOptions& options) {
  if (options.solver == FlowSolver::kUniPc) {
    if (!options.base_sigmas.empty() && options.sigmas.empty()) {
      return absl::InvalidArgumentError("UniPC's flow schedule takes no base sigmas (WanPipeline has no sigmas)");
    }
    std::vector<double> sigmas;
    if (!options.sigmas.empty()) {
      DIFFUSIOND_RETURN_IF_ERROR(check_explicit_sigmas(options.sigmas));
      sigmas.assign(options.sigmas.begin(), options.sigmas.end());
      // At σ = 1 the log-SNR UniPC steps in is -inf and the corrector's
      // ratios turn NaN: nudged as the schedule below nudges its own.
      if (sigmas[0] == 1.0) sigmas[0] = static_cast<float>(1.0 - 1e-6);
    } else {
      if (options.steps < 1 || options.steps > 1000) {
        return absl::InvalidArgumentError(absl::StrCat("steps is ", options.steps, ", expected 1 to 1000"));
      }
      if (!(options.shift > 0.0)) {
        return absl::InvalidArgumentError(absl::StrCat("shift is ", options.shift, ", expected > 0"));
      }
      sigmas = unipc_flow_sigmas(options.steps, options.shift);
    }
    Schedule schedule;
    for (double s : sigmas) {
      schedule.sigmas.push_back(static_cast<float>(s));
      schedule.timesteps.push_back(static_cast<float>(static_cast<int64_t>(s * 1000.0)));
    }
    schedule.sigmas.push_back(0.0f);
    return schedule;
  }
  torch::Tensor sigmas;
  if (!options.sigmas.empty()) {
    DIFFUSIOND_RETURN_IF_ERROR(check_explicit_sigmas(options.sigmas));
    sigmas = torch::tensor(options.sigmas, torch::kFloat32);
  } else {
    torch::Tensor s;
    if (!options.base_sigmas.empty()) {
      DIFFUSIOND_RETURN_IF_ERROR(check_explicit_sigmas(options.base_sigmas));
      s = torch::tensor(options.base_sigmas, torch::kFloat32);
    } else if (options.steps < 1 || options.steps > 1000) {
      return absl::InvalidArgumentError(absl::StrCat("steps is ", options.steps, ", expected 1 to 1000"));
    } else {
      s = options.float64_linspace ? numpy_linspace(1.0, 1.0 / options.steps, options.steps)
                                   : torch::linspace(1.0, 1.0 / options.steps, options.steps, torch::kFloat32);
    }
    if (options.dynamic_shift) {
      const double m = (options.max_shift - options.base_shift) /
                       static_cast<double>(options.max_seq_len - options.base_seq_len);
      const double mu = options.mu.has_value()
                            ? *options.mu
                            : static_cast<double>(options.image_seq_len) * m +
                                  (options.base_shift - m * static_cast<double>(options.base_seq_len));
      const float e = static_cast<float>(std::exp(mu));
      sigmas = e / (e + (1.0f / s - 1.0f));
    } else {
      if (!(options.shift > 0.0)) {
        return absl::InvalidArgumentError(absl::StrCat("shift is ", options.shift, ", expected > 0"));
      }
      const float shift = static_cast<float>(options.shift);
      sigmas = shift * s / (1.0f + (shift - 1.0f) * s);
    }
    if (!(options.shift_terminal >= 0.0 && options.shift_terminal < 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shift_terminal is ", options.shift_terminal, ", expected 0 (off) or within (0, 1)"));
    }
    if (options.shift_terminal > 0.0) {
      // As numpy rounds upstream's stretch_shift_to_terminal: the scale is
      // a float64 scalar, applied to the float32 array in float32.
      const torch::Tensor one_minus = 1.0f - sigmas;
      const double last = static_cast<double>(one_minus[-1].item<float>());
      const float scale = static_cast<float>(last / (1.0 - options.shift_terminal));
      sigmas = 1.0f - one_minus / scale;
    }
  }
  Schedule schedule;
  torch::Tensor timesteps = sigmas * 1000.0f;
  // UniPC's model sees integer timesteps.
  if (options.solver == FlowSolver::kUniPc) timesteps = timesteps.trunc();
  schedule.sigmas.assign(sigmas.data_ptr<float>(), sigmas.data_ptr<float>() + sigmas.numel());
  schedule.sigmas.push_back(0.0f);
  schedule.timesteps.assign(timesteps.data_ptr<float>(), timesteps.data_ptr<float>() + timesteps.numel());
  return schedule;
}

int strength_first_step(int steps, double strength) {
  const double init = std::min(steps * strength, static_cast<double>(steps));
  return static_cast<int>(std::max(steps - init, 0.0));
}

ScheduleOptions flow_match_euler_defaults() {
  ScheduleOptions o;
  o.solver = FlowSolver::kEuler;
  o.shift = 1.0;
  o.dynamic_shift = false;
  o.base_shift = 0.5;
  o.max_shift = 1.15;
  o.base_seq_len = 256;
  o.max_seq_len = 4096;
  o.shift_terminal = 0.0;
  return o;
}

}  // namespace diffusiond
