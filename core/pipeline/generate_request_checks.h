// The checks of a Generate request that need no load: its own fields
// (sizes, steps, guidance, prompts, batch, seeds, sigmas, image inputs),
// the image inputs its family takes, and the components its family names
// that no model family implements yet. Each names the field it refuses.
//
// Not here: what needs a component's description (generate.cc).
#ifndef DIFFUSIOND_CORE_PIPELINE_GENERATE_REQUEST_CHECKS_H_
#define DIFFUSIOND_CORE_PIPELINE_GENERATE_REQUEST_CHECKS_H_

#include "absl/status/status.h"
#include "core/pipeline/generate.h"
#include "core/pipeline/pipeline_family.h"

namespace diffusiond {

// INVALID_ARGUMENT naming the first field that is out of its range or
// disagrees with another (a mask without an image, an image of another
// size than width x height, seeds that do not count the images, a
// negative padding_mask_crop or one without its mask, ...).
absl::Status check_generate_request(const GenerateRequest& r);

// INVALID_ARGUMENT naming `image`, `mask_image` or `padding_mask_crop`
// when `family` takes no such input.
absl::Status check_image_inputs(const GenerateRequest& r, const PipelineFamily& family);

// UNIMPLEMENTED, naming the first component, when `family` declares one
// that no model family can load yet: whatever a request gives in its
// place, the recipe needs that architecture.
absl::Status check_components_ported(const PipelineFamily& family);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_GENERATE_REQUEST_CHECKS_H_
