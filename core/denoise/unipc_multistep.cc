#include "core/denoise/unipc_multistep.h"

#include <algorithm>
#include <cmath>

namespace diffusiond {
namespace {

// The B(h) terms of one update of step size h (in lambda): h·φ1 = e^−h − 1
// and B(h) = e^−h − 1 (bh2), with hh = −h as the data-prediction form
// writes them.
struct BhTerms {
  float hh = 0, h_phi_1 = 0, b_h = 0;
};

BhTerms bh_terms(float h) {
  BhTerms t;
  t.hh = -h;
  t.h_phi_1 = std::expm1(t.hh);
  t.b_h = std::expm1(t.hh);
  return t;
}

}  // namespace

UniPcSolver::UniPcSolver(const Schedule& schedule, int order)
    : sigmas_(schedule.sigmas), order_(std::clamp(order, 1, 2)) {}

// lambda = log(alpha) − log(sigma) with alpha = 1 − sigma (flow sigmas);
// +inf at the final sigma 0, where the update reduces to x0.
float UniPcSolver::lambda(int index) const {
  const float sigma = sigmas_[index];
  return std::log(1.0f - sigma) - std::log(sigma);
}

torch::Tensor UniPcSolver::step(int i, const torch::Tensor& sample, const torch::Tensor& velocity) {
  const torch::Tensor x0 = sample - sigmas_[i] * velocity;
  torch::Tensor current = sample;
  if (i > 0 && last_sample_.defined()) current = correct(i, x0);
  x0_.push_back(x0);
  if (static_cast<int>(x0_.size()) > order_) x0_.erase(x0_.begin());
  // Lower orders while the history fills, and at the last step.
  const int remaining = static_cast<int>(sigmas_.size()) - 1 - i;
  const int order = std::min({order_, remaining, std::min(i, order_) + 1});
  last_sample_ = current;
  last_order_ = order;
  return predict(i, current, order);
}

torch::Tensor UniPcSolver::predict(int i, const torch::Tensor& sample, int order) const {
  const float sigma_t = sigmas_[i + 1], sigma_s0 = sigmas_[i];
  const float alpha_t = 1.0f - sigma_t;
  const float lambda_s0 = lambda(i);
  const float h = lambda(i + 1) - lambda_s0;
  const BhTerms bh = bh_terms(h);
  const torch::Tensor& m0 = x0_.back();
  torch::Tensor x_t = (sigma_t / sigma_s0) * sample - (alpha_t * bh.h_phi_1) * m0;
  if (order == 2) {
    // rho = 0.5 at order two, as upstream simplifies it.
    const float rk = (lambda(i - 1) - lambda_s0) / h;
    const torch::Tensor d1 = (x0_[x0_.size() - 2] - m0) / rk;
    x_t = x_t - (alpha_t * bh.b_h) * (0.5f * d1);
  }
  return x_t;
}

torch::Tensor UniPcSolver::correct(int i, const torch::Tensor& x0) const {
  const int order = last_order_;
  const float sigma_t = sigmas_[i], sigma_s0 = sigmas_[i - 1];
  const float alpha_t = 1.0f - sigma_t;
  const float lambda_s0 = lambda(i - 1);
  const float h = lambda(i) - lambda_s0;
  const BhTerms bh = bh_terms(h);
  const torch::Tensor& m0 = x0_.back();
  float rho_d1 = 0, rho_t = 0.5f;
  torch::Tensor d1;
  if (order == 2) {
    const float rk = (lambda(i - 2) - lambda_s0) / h;
    d1 = (x0_[x0_.size() - 2] - m0) / rk;
    // rho solves R rho = b with R = [[1, 1], [rk, 1]] and b_k = h·φ_k(h)·k! / B(h)
    // (φ_1 − 1 terms of the exponential integrator), in float32 as upstream.
    float h_phi_k = bh.h_phi_1 / bh.hh - 1.0f;
    const float b1 = h_phi_k / bh.b_h;
    h_phi_k = h_phi_k / bh.hh - 0.5f;
    const float b2 = h_phi_k * 2.0f / bh.b_h;
    const torch::Tensor r = torch::tensor({1.0f, 1.0f, rk, 1.0f}).reshape({2, 2});
    const torch::Tensor rho = torch::linalg_solve(r, torch::tensor({b1, b2}));
    rho_d1 = rho[0].item<float>();
    rho_t = rho[1].item<float>();
  }
  torch::Tensor x_t = (sigma_t / sigma_s0) * last_sample_ - (alpha_t * bh.h_phi_1) * m0;
  torch::Tensor residual = rho_t * (x0 - m0);
  if (order == 2) residual = rho_d1 * d1 + residual;
  return x_t - (alpha_t * bh.b_h) * residual;
}

}  // namespace diffusiond
