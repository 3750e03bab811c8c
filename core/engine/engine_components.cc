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
  // Refused before any wait when the model is not a text encoder.
  DIFFUSIOND_RETURN_IF_ERROR(pin_as<TextEncoder>(model_id, "a text encoder").status());
  DIFFUSIOND_ASSIGN_OR_RETURN(PinnedRoom room, pin_with_room(
                                                   model_id,
                                                   [&](const Model& m) -> absl::StatusOr<CallRoom> {
                                                     const auto* e = dynamic_cast<const TextEncoder*>(&m);
                                                     if (e == nullptr)
                                                       return absl::FailedPreconditionError("not a text encoder");
                                                     return CallRoom{
                                                         e->encode_activation_bytes(e->max_tokens_of(request)),
                                                         absl::StrCat("the encoding of \"", bounded(model_id), "\"")};
                                                   },
                                                   job, evicted));
  const auto* typed = dynamic_cast<const TextEncoder*>(&room.pin.as<LoadedModel>()->model());
  if (typed == nullptr) return absl::FailedPreconditionError(absl::StrCat("model \"", bounded(model_id), "\" changed"));
  const TextEncoder& encoder = *typed;
  CancellationScope scope(job.token());
  return status_of("the text encoding", [&] { return encoder.encode(request); });
}

absl::StatusOr<torch::Tensor> Engine::decode_image(const std::string& model_id, const torch::Tensor& latents,
                                                  const CancellationToken& cancel,
                                                  std::vector<std::string>* evicted) {
  Job job(this, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(admit(job));
  const auto decoder_of = [&](const Model& m) -> absl::StatusOr<const ImageDecoder*> {
    const auto* d = dynamic_cast<const ImageDecoder*>(&m);
    if (d == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("model \"", bounded(model_id), "\" is a ",
                                                        model_role_name(m.role()), " (", m.architecture(),
                                                        "), not an image decoder (VAE)"));
    }
    if (absl::Status checked = d->check_latents(latents); !checked.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("VAE \"", bounded(model_id), "\": ", checked.message()));
    }
    return d;
  };
  {
    DIFFUSIOND_ASSIGN_OR_RETURN(Pin probe, pin(model_id));
    DIFFUSIOND_RETURN_IF_ERROR(decoder_of(probe.as<LoadedModel>()->model()).status());
  }
  // Whole when that fits now, else tile by tile, as diffusers'
  // enable_tiling(), waiting in line for room if work in flight holds it.
  bool tiled = false;
  const auto room_of = [&](const Model& m) -> absl::StatusOr<CallRoom> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* d, decoder_of(m));
    return CallRoom{d->decode_activation_bytes(latents, tiled),
                    absl::StrCat(tiled ? "a tiled" : "an untiled", " decode with \"", bounded(model_id), "\"")};
  };
  absl::StatusOr<PinnedRoom> room = pin_with_room(model_id, room_of, job, evicted, /*wait=*/false);
  if (absl::IsResourceExhausted(room.status())) {
    tiled = true;
    absl::StatusOr<PinnedRoom> tiled_room = pin_with_room(model_id, room_of, job, evicted);
    if (absl::IsResourceExhausted(tiled_room.status())) {
      return absl::ResourceExhaustedError(absl::StrCat(room.status().message(), "; ", tiled_room.status().message()));
    }
    room = std::move(tiled_room);
  }
  if (!room.ok()) return room.status();
  DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* admitted, decoder_of(room->pin.as<LoadedModel>()->model()));
  const ImageDecoder& decoder = *admitted;
  CancellationScope scope(job.token());
  return status_of("the decode", [&]() -> absl::StatusOr<torch::Tensor> {
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor image, decoder.decode_latents(latents, tiled));
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor pixels, image_to_uint8(image));
    return pixels[0];
  });
}

}  // namespace diffusiond
