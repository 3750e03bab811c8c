// Z-Image's pipeline recipe (diffusers' ZImagePipeline): Qwen3 text encoder
// → Z-Image transformer → the 16-channel AutoencoderKL.
#ifndef DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_PIPELINE_H_
#define DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_PIPELINE_H_

#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// Lives for the process.
const PipelineFamily* z_image_pipeline();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_Z_IMAGE_Z_IMAGE_PIPELINE_H_
