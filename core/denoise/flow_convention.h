// FlowConvention: how a flow-matching model's output and time relate to the
// flow velocity v = noise − x0 the Euler step integrates. Each architecture
// states its own; the denoise loop applies it, so no model's convention
// lives in the loop.
#ifndef DIFFUSIOND_CORE_DENOISE_FLOW_CONVENTION_H_
#define DIFFUSIOND_CORE_DENOISE_FLOW_CONVENTION_H_

#include <cstdint>

namespace diffusiond {

// The time a model is given at a step whose scheduler timestep is T
// (= sigma × 1000, float32).
enum class ModelTime {
  kSigma,          // T / 1000 (FLUX.1: the pipeline passes timestep / 1000)
  kOneMinusSigma,  // (1000 − T) / 1000 (Z-Image)
  kTimestep,       // T itself, 0 to 1000 (Wan 2.x: the pipeline passes the scheduler's timestep)
};

struct FlowConvention {
  // velocity = velocity_sign × output: +1 for models that predict
  // noise − x0 (FLUX.1), −1 for x0 − noise (Z-Image).
  float velocity_sign = 1.0f;
  ModelTime time = ModelTime::kSigma;
  // Classifier-free guidance with a norm rescale (Qwen-Image's pipeline):
  // when > 0, the guided output comb = neg + s·(pos − neg) is scaled per
  // token to the positive output's L2 norm, comb · ‖pos‖ / ‖comb‖ (no
  // epsilon, as upstream), where a token is every channel of one
  // guidance_norm_patch × guidance_norm_patch block of the unpacked latent
  // (the model's packed patch). 0: plain guidance.
  int64_t guidance_norm_patch = 0;
};

// The model time for scheduler timestep `timestep` under `time`.
inline float model_time(ModelTime time, float timestep) {
  switch (time) {
    case ModelTime::kSigma:
      return timestep / 1000.0f;
    case ModelTime::kOneMinusSigma:
      return (1000.0f - timestep) / 1000.0f;
    case ModelTime::kTimestep:
      break;
  }
  return timestep;
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_DENOISE_FLOW_CONVENTION_H_
