// Engine operations on the components of a pipeline other than the
// denoiser: text encoders and VAEs.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/engine.h"
#include "core/engine/internal/engine_job.h"
#include "core/models/vae/image_postprocess.h"
#include "core/models/image_decoder.h"
#include "core/models/text_encoder.h"
#include "core/util/bounded_text.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {

template <typename T>
absl::StatusOr<std::pair<Pin, const T*>> Engine::pin_as(const std::string& model_id, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(Pin pinned, pin(model_id));
  const Model& model = pinned.as<LoadedModel>()->model();
  const auto* typed = dynamic_cast<const T*>(&model);
  if (typed == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("model \"", bounded(model_id), "\" is a ",
                                                      model_role_name(model.role()), " (", model.architecture(),
                                                      "), not ", what));
  }
  return std::make_pair(std::move(pinned), typed);
}

absl::StatusOr<EncodedText> Engine::encode_text(const std::string& model_id, const TextEncoding& request,
                                                const CancellationToken& cancel, std::vector<std::string>* evicted) {
  Job job(this, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(admit(job));
  DIFFUSIOND_ASSIGN_OR_RETURN(auto pinned, pin_as<TextEncoder>(model_id, "a text encoder"));
  const TextEncoder& encoder = *pinned.second;
  const int64_t activations = encoder.encode_activation_bytes(encoder.max_tokens_of(request));
  absl::StatusOr<Reservation> room = cache_->make_room(activations, Device::kCpu, evicted);
  if (!room.ok()) {
    return absl::Status(room.status().code(),
                        absl::StrCat("no room to encode with \"", bounded(model_id), "\": ", room.status().message()));
  }
  CancellationScope scope(job.token());
  return status_of("the text encoding", [&] { return encoder.encode(request); });
}

absl::StatusOr<torch::Tensor> Engine::decode_image(const std::string& model_id, const torch::Tensor& latents,
                                                  const CancellationToken& cancel,
                                                  std::vector<std::string>* evicted) {
  Job job(this, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(admit(job));
  DIFFUSIOND_ASSIGN_OR_RETURN(auto pinned, pin_as<ImageDecoder>(model_id, "an image decoder (VAE)"));
  const ImageDecoder& decoder = *pinned.second;
  if (absl::Status checked = decoder.check_latents(latents); !checked.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("VAE \"", bounded(model_id), "\": ", checked.message()));
  }
  // Whole when that fits, else tile by tile, as diffusers' enable_tiling().
  bool tiled = false;
  absl::StatusOr<Reservation> room =
      cache_->make_room(decoder.decode_activation_bytes(latents, tiled), Device::kCpu, evicted);
  if (!room.ok()) {
    tiled = true;
    absl::StatusOr<Reservation> tiled_room =
        cache_->make_room(decoder.decode_activation_bytes(latents, tiled), Device::kCpu, evicted);
    if (!tiled_room.ok()) {
      return absl::ResourceExhaustedError(absl::StrCat("no room to decode: untiled: ", room.status().message(),
                                                       "; tiled: ", tiled_room.status().message()));
    }
    room = std::move(tiled_room);
  }
  CancellationScope scope(job.token());
  return status_of("the decode", [&]() -> absl::StatusOr<torch::Tensor> {
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor image, decoder.decode_latents(latents, tiled));
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor pixels, image_to_uint8(image));
    return pixels[0];
  });
}

}  // namespace diffusiond
