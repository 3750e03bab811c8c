#include "server/request_checks.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"
#include "proto/wire_format.h"

namespace diffusiond {
namespace {

// Latents the daemon denoises or decodes. A NaN or an infinity would not
// fail: it would spread through every step and come back as a black or
// garbage image after the whole run.
absl::Status check_latents(const v1::Tensor& wire, absl::string_view what) {
  absl::StatusOr<WireTensorLayout> layout = check_wire_tensor(wire, what);
  if (!layout.ok()) return layout.status();
  if (!wire_dtype_is_floating(layout->dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a floating-point tensor, got ", wire_dtype_name(layout->dtype)));
  }
  return check_wire_finite(wire, what);
}

absl::Status check_pipeline_field(const std::string& pipeline) {
  if (pipeline.size() > kMaxPipelineBytes) {
    return absl::InvalidArgumentError(absl::StrCat("pipeline \"", bounded(pipeline), "\" is longer than ",
                                                   kMaxPipelineBytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status check_finite_non_negative(double value, absl::string_view field) {
  if (!std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be finite and >= 0, got ", value));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status check_denoise_request(const v1::DenoiseRequest& wire) {
  DIFFUSIOND_RETURN_IF_ERROR(check_wire_conditioning(wire.conditioning(), "conditioning"));
  if (wire.has_negative()) {
    DIFFUSIOND_RETURN_IF_ERROR(check_wire_conditioning(wire.negative(), "negative conditioning"));
  }
  if (wire.has_initial_latents()) {
    DIFFUSIOND_RETURN_IF_ERROR(check_latents(wire.initial_latents(), "initial_latents"));
  } else if (wire.latent_shape_size() == 0) {
    return absl::InvalidArgumentError("give initial_latents or latent_shape [C, H, W]");
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_finite_non_negative(wire.guidance_scale(), "guidance_scale"));
  if (wire.steps() < 0 || wire.steps() > kMaxDenoiseSteps) {
    return absl::InvalidArgumentError(absl::StrCat("steps must be in [0, ", kMaxDenoiseSteps,
                                                   "] (0: ", kDefaultDenoiseSteps, "), got ", wire.steps()));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_finite_non_negative(wire.shift(), "shift"));
  if (wire.sigmas_size() > kMaxDenoiseSteps) {
    return absl::InvalidArgumentError(
        absl::StrCat("at most ", kMaxDenoiseSteps, " sigmas, got ", wire.sigmas_size()));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_finite_non_negative(wire.guidance_scale_2(), "guidance_scale_2"));
  if (wire.expert_2().empty() && (wire.boundary_ratio() != 0 || wire.guidance_scale_2() != 0)) {
    return absl::InvalidArgumentError("boundary_ratio and guidance_scale_2 need a second expert (expert_2)");
  }
  if (!wire.expert_2().empty() && !(wire.boundary_ratio() > 0 && wire.boundary_ratio() <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("boundary_ratio must be in (0, 1] with a second expert, got ", wire.boundary_ratio()));
  }
  if (!wire.expert_2().empty() && wire.later_segments_size() > 0) {
    return absl::InvalidArgumentError("give expert_2 or later_segments, not both: expert_2 is one later segment");
  }
  if (wire.later_segments_size() > kMaxDenoiseSegments) {
    return absl::InvalidArgumentError(
        absl::StrCat("at most ", kMaxDenoiseSegments, " later segments, got ", wire.later_segments_size()));
  }
  double above = 1;
  for (int k = 0; k < wire.later_segments_size(); ++k) {
    const v1::DenoiseSegment& s = wire.later_segments(k);
    const std::string name = absl::StrCat("later_segments[", k, "]");
    if (s.model_id().empty()) return absl::InvalidArgumentError(absl::StrCat(name, " names no model_id"));
    DIFFUSIOND_RETURN_IF_ERROR(check_finite_non_negative(s.guidance_scale(), name + ".guidance_scale"));
    if (!(s.boundary_ratio() > 0 && (k == 0 ? s.boundary_ratio() <= above : s.boundary_ratio() < above))) {
      return absl::InvalidArgumentError(absl::StrCat(name, ".boundary_ratio must be in (0, ", above,
                                                     k == 0 ? "]" : ") (below the segment before it)", ", got ",
                                                     s.boundary_ratio()));
    }
    above = s.boundary_ratio();
  }
  return absl::OkStatus();
}

absl::Status check_decode_request(const v1::DecodeRequest& wire) {
  return check_latents(wire.latents(), "latents");
}

absl::Status check_generate_request(const v1::GenerateRequest& wire) {
  if (wire.width() < 0 || wire.height() < 0 || wire.steps() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("width, height and steps must not be negative (0: the defaults), got ", wire.width(), "x",
                     wire.height(), ", ", wire.steps(), " steps"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_pipeline_field(wire.pipeline()));
  if (!v1::VideoFormat_IsValid(wire.video_format())) {
    return absl::InvalidArgumentError(absl::StrCat("video_format ", wire.video_format(),
                                                   " is none of MP4 (1) and PNG_FRAMES (2)"));
  }
  // A pipeline has a handful of components; names are folder names.
  constexpr int kMaxComponents = 16;
  if (wire.components_size() > kMaxComponents || wire.component_options_size() > kMaxComponents) {
    return absl::InvalidArgumentError(absl::StrCat("a Generate names at most ", kMaxComponents,
                                                   " components, got ", wire.components_size(), " in components and ",
                                                   wire.component_options_size(), " in component_options"));
  }
  for (const auto& [name, id] : wire.components()) {
    if (name.empty() || name.size() > 64 || name.find_first_of("/\\") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("component name \"", bounded(name),
                                                     "\" is not a pipeline component's folder name"));
    }
  }
  return absl::OkStatus();
}

absl::Status check_encode_prompt_request(const v1::EncodePromptRequest& wire) {
  return check_pipeline_field(wire.pipeline());
}

}  // namespace diffusiond
