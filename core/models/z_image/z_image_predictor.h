// The FlowPredictor for a Z-Image model: the pipeline's call convention
// (latents as [C, 1, H, W], positive and negative captions in one batched
// call, inputs at the model's compute dtype).
#ifndef DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_PREDICTOR_H_
#define DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_PREDICTOR_H_

#include <torch/types.h>

#include "core/denoise/denoise_loop.h"
#include "core/models/z_image/z_image_model.h"

namespace diffusiond {

// `model` must outlive the predictor (hold its Pin). cap_feats and
// neg_cap_feats are [L, cap_feat_dim]; neg may be undefined without guidance.
FlowPredictor z_image_predictor(const ZImageModel& model, torch::Tensor cap_feats,
                                torch::Tensor neg_cap_feats);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_PREDICTOR_H_
