// The UniPC multistep solver (diffusers' UniPCMultistepScheduler with
// use_flow_sigmas and prediction_type "flow_prediction", as the Wan 2.x
// pipelines are converted with): each step turns the flow velocity into a
// prediction of the clean latents x0 = x − σ·v, corrects the sample the
// last step predicted with it (UniC) and predicts the next sample (UniP),
// both in the B(h) = e^h − 1 ("bh2") form, of order up to two from the
// previous steps' x0. All scalar arithmetic is float32, as upstream's.
//
// Not here: its sigmas and integer timesteps (flow_match_schedule.cc,
// FlowSolver::kUniPc), the loop that calls it (denoise_loop.h).
#ifndef DIFFUSIOND_CORE_DENOISE_UNIPC_MULTISTEP_H_
#define DIFFUSIOND_CORE_DENOISE_UNIPC_MULTISTEP_H_

#include <torch/types.h>

#include <vector>

#include "core/denoise/flow_match_schedule.h"

namespace diffusiond {

// One run of the solver over a schedule. Not thread-safe; one per loop.
class UniPcSolver {
 public:
  // `schedule`: sigmas ending in 0; `order` 1 or 2 (solver_order). The
  // last step runs at order 1 (lower_order_final).
  UniPcSolver(const Schedule& schedule, int order);

  // Returns the sample after step `i` (0, 1, … in order) from `sample`, the
  // sample the step started from, and `velocity`, the model's flow
  // prediction there (after guidance), both float32.
  torch::Tensor step(int i, const torch::Tensor& sample, const torch::Tensor& velocity);

 private:
  // The predictor's (UniP) next sample from `sample` at step i.
  torch::Tensor predict(int i, const torch::Tensor& sample, int order) const;
  // The corrector's (UniC) sample at step i, which replaces the one the
  // last step predicted: from the sample that step started from and x0 at
  // step i.
  torch::Tensor correct(int i, const torch::Tensor& x0) const;
  float lambda(int index) const;

  const std::vector<float> sigmas_;
  const int order_;
  std::vector<torch::Tensor> x0_;  // the last `order_` steps' x0, oldest first
  torch::Tensor last_sample_;      // the sample the last predictor started from
  int last_order_ = 0;             // the order the last step ran at
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_DENOISE_UNIPC_MULTISTEP_H_
