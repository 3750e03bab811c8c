#include "core/pipeline/generate_request_checks.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/pipeline/image_inputs.h"
#include "core/pipeline/unported_architectures.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// The image inputs of a padding_mask_crop request, which carries its own.
absl::Status check_mask_crop(const GenerateRequest& r) {
  const MaskCrop& crop = *r.padding_mask_crop;
  if (crop.padding < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("padding_mask_crop must be >= 0 pixels (unset: no crop), got ", crop.padding));
  }
  if (r.image.defined() || r.mask_image.defined()) {
    return absl::InvalidArgumentError(
        "padding_mask_crop carries its own init image and mask, as Pillow images (upstream crops PIL images only); "
        "leave image and mask_image unset");
  }
  for (const auto& [field, image] : {std::pair<const char*, const PilImage*>{"image", &crop.image},
                                     {"mask_image", &crop.mask}}) {
    if (image->width < 1 || image->height < 1) {
      return absl::InvalidArgumentError(absl::StrCat("padding_mask_crop needs ", field,
                                                     field == std::string("image") ? " (the init image it crops)"
                                                                                   : " (it crops around the mask)"));
    }
    if (image->mode != PilMode::kL && image->mode != PilMode::kRgb) {
      return absl::InvalidArgumentError(absl::StrCat("padding_mask_crop: ", field, " must be an \"L\" or \"RGB\" image, got \"",
                                                     pil_mode_name(image->mode), "\""));
    }
    if (image->width > kGenerateMaxSide || image->height > kGenerateMaxSide ||
        image->pixels.size() != static_cast<size_t>(image->width * image->height * image->bands())) {
      return absl::InvalidArgumentError(absl::StrCat("padding_mask_crop: ", field, " is ", image->width, "x",
                                                     image->height, " in ", image->pixels.size(),
                                                     " bytes: each side must be 1 to ", kGenerateMaxSide,
                                                     " pixels, a byte per pixel and band"));
    }
  }
  if (crop.mask.width != crop.image.width || crop.mask.height != crop.image.height) {
    return absl::InvalidArgumentError(absl::StrCat("mask_image is ", crop.mask.width, "x", crop.mask.height,
                                                   ", the image ", crop.image.width, "x", crop.image.height,
                                                   ": padding_mask_crop needs them the same size"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status check_generate_request(const GenerateRequest& r) {
  for (int64_t side : {r.width, r.height}) {
    if (side != 0 && (side < 16 || side > kGenerateMaxSide)) {
      return absl::InvalidArgumentError(absl::StrCat("width and height must be 16 to ", kGenerateMaxSide,
                                                     " (0: the pipeline's default), got ", r.width, "x", r.height));
    }
  }
  if (!r.sigmas.empty()) {
    if (r.steps != 0 && r.steps != static_cast<int>(r.sigmas.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("sigmas gives ", r.sigmas.size(), " steps, but steps asks for ", r.steps));
    }
    if (r.sigmas.size() > static_cast<size_t>(kGenerateMaxSteps)) {
      return absl::InvalidArgumentError(absl::StrCat("sigmas may hold at most ", kGenerateMaxSteps, " values"));
    }
    for (size_t i = 0; i < r.sigmas.size(); ++i) {
      if (!(r.sigmas[i] > 0.0f && r.sigmas[i] <= 1.0f) || (i > 0 && !(r.sigmas[i] < r.sigmas[i - 1]))) {
        return absl::InvalidArgumentError(
            absl::StrCat("sigmas must decrease strictly within (0, 1]; sigma ", i, " is ", r.sigmas[i]));
      }
    }
  }
  if (r.max_sequence_length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_sequence_length must be positive (0: the pipeline's), got ", r.max_sequence_length));
  }
  if (r.steps < 0 || r.steps > kGenerateMaxSteps) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps must be 1 to ", kGenerateMaxSteps, " (0: the pipeline's default), got ", r.steps));
  }
  if (r.guidance_scale.has_value() && r.legacy_guidance_scale.has_value()) {
    return absl::InvalidArgumentError(
        "give guidance_scale (upstream's meaning) or legacy_guidance_scale (the daemon's former one), not both");
  }
  if (r.num_frames < 0 || r.num_frames > kGenerateMaxFrames) {
    return absl::InvalidArgumentError(absl::StrCat("num_frames must be 1 to ", kGenerateMaxFrames,
                                                   " (0: the pipeline's default), got ", r.num_frames));
  }
  for (const auto& [name, value] :
       {std::pair<const char*, double>{"guidance_scale", r.guidance_scale.value_or(0)},
        {"guidance_scale_2", r.guidance_scale_2.value_or(0)},
        {"legacy_guidance_scale", r.legacy_guidance_scale.value_or(0)},
        {"true_cfg_scale", r.true_cfg_scale},
        {"shift", r.shift}}) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, " must be finite and >= 0, got ", value));
    }
  }
  if (r.num_images_per_prompt < 0 || r.num_images_per_prompt > kGenerateMaxImages) {
    return absl::InvalidArgumentError(absl::StrCat("num_images_per_prompt must be 1 to ", kGenerateMaxImages,
                                                   " (0: 1), got ", r.num_images_per_prompt));
  }
  if (!r.seeds.empty()) {
    const int n = std::max(r.num_images_per_prompt, 1);
    if (static_cast<int>(r.seeds.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("seeds gives one seed per image: ", n, " for num_images_per_prompt ",
                                                     r.num_images_per_prompt, ", got ", r.seeds.size()));
    }
    if (r.seed != 0) {
      return absl::InvalidArgumentError("give seed (one generator for the batch) or seeds (one per image), not both");
    }
  }
  if (!(r.strength >= 0 && r.strength <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("strength must be in (0, 1] (0: the pipeline's default), got ", r.strength));
  }
  for (const std::string* text : {&r.prompt, &r.negative_prompt}) {
    if (text->size() > kGenerateMaxPromptBytes) {
      return absl::InvalidArgumentError(absl::StrCat("a prompt may hold at most ", kGenerateMaxPromptBytes,
                                                     " bytes, got ", text->size()));
    }
  }
  if (r.padding_mask_crop.has_value()) return check_mask_crop(r);
  if (!r.image.defined()) {
    if (r.mask_image.defined()) return absl::InvalidArgumentError("mask_image needs the image it masks (image)");
    if (r.strength != 0) return absl::InvalidArgumentError("strength is used only with an init image (image)");
    return absl::OkStatus();
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_image_input(r.image, "image"));
  const int64_t image_width = r.image.size(2), image_height = r.image.size(1);
  if ((r.width != 0 && r.width != image_width) || (r.height != 0 && r.height != image_height)) {
    return absl::InvalidArgumentError(absl::StrCat("image is ", image_width, "x", image_height, " but width and height ask for ",
                                                   r.width, "x", r.height, ": the daemon does not resize; send the image "
                                                   "at the size to generate, or leave width and height 0"));
  }
  if (r.mask_image.defined()) {
    DIFFUSIOND_RETURN_IF_ERROR(check_mask_input(r.mask_image, "mask_image"));
    if (r.mask_image.size(1) != image_width || r.mask_image.size(0) != image_height) {
      return absl::InvalidArgumentError(absl::StrCat("mask_image is ", r.mask_image.size(1), "x", r.mask_image.size(0),
                                                     ", the image ", image_width, "x", image_height,
                                                     ": they must be the same size"));
    }
  }
  return absl::OkStatus();
}

absl::Status check_image_inputs(const GenerateRequest& r, const PipelineFamily& family) {
  const std::optional<ImageInputs> inputs = family.image_inputs();
  if (r.padding_mask_crop.has_value() && !(inputs.has_value() && inputs->padding_mask_crop)) {
    return absl::InvalidArgumentError(absl::StrCat("padding_mask_crop: the ", family.name(),
                                                   " pipeline takes none (its upstream inpainting pipeline has no "
                                                   "padding_mask_crop); nothing was loaded"));
  }
  if (!r.image.defined()) return absl::OkStatus();
  if (!inputs.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("image: the ", family.name(),
                                                   " pipeline takes no init image (no img2img upstream, or not yet "
                                                   "here); nothing was loaded"));
  }
  if (r.mask_image.defined() && !inputs->inpaint_strength.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mask_image: the ", family.name(), " pipeline has no inpainting; nothing was loaded"));
  }
  return absl::OkStatus();
}

absl::Status check_components_ported(const PipelineFamily& family) {
  for (const PipelineComponent& c : family.components()) {
    if (is_unported_architecture(c.architecture)) {
      return absl::UnimplementedError(absl::StrCat("the ", family.name(), " pipeline's component ", c.name, " (",
                                                   c.architecture, ") cannot be loaded yet: no model family "
                                                   "implements that architecture; nothing was loaded"));
    }
  }
  return absl::OkStatus();
}

}  // namespace diffusiond
