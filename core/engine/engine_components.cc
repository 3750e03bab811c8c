// Engine operations on the components of a pipeline other than the
// denoiser: text encoders and VAEs. With a device they run there, placed
// by the rule denoisers follow (engine_placement.cc); their outputs come
// back to RAM.
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/engine.h"
#include "core/engine/internal/engine_job.h"
#include "core/memory/activation_arena_scope.h"
#include "core/models/image_decoder.h"
#include "core/models/text_encoder.h"
#include "core/models/vae/image_postprocess.h"
#include "core/util/bounded_text.h"
#include "core/util/cancellation_scope.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"
#include "core/vram/device_placement.h"

namespace diffusiond {

namespace {

// `model` (cached as `model_id`) as a `T`: FAILED_PRECONDITION naming what
// it is instead (`what`, e.g. "a text encoder").
template <typename T>
absl::StatusOr<const T*> component_as(const Model& model, const std::string& model_id, absl::string_view what) {
  const auto* typed = dynamic_cast<const T*>(&model);
  if (typed == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("model \"", bounded(model_id), "\" is a ",
                                                      model_role_name(model.role()), " (", model.architecture(),
                                                      "), not ", what));
  }
  return typed;
}

const Model& model_of_pin(const Pin& pin) { return pin.as<LoadedModel>()->model(); }

}  // namespace

absl::StatusOr<EncodedText> Engine::encode_text(const std::string& model_id, const TextEncoding& request,
                                                const CancellationToken& cancel, std::vector<std::string>* evicted,
                                                CallDevice* where) {
  Job job(this, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(admit(job));
  // A model that is not a text encoder is refused by room_of, before any
  // wait for room.
  const auto encoder_of = [&](const Model& m) { return component_as<TextEncoder>(m, model_id, "a text encoder"); };
  const auto activation_bytes = [&](const TextEncoder& e) {
    return e.encode_activation_bytes(e.max_tokens_of(request));
  };
  // On a device the activations are VRAM's, beside the placement, and the
  // encoder runs there (prepare_device: the rule every role follows).
  Pin pinned;
  Reservation activations;
  std::optional<DeviceRun> on_device;
  if (vram_ != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(pinned, pin(model_id));
    DIFFUSIOND_ASSIGN_OR_RETURN(const TextEncoder* e, encoder_of(model_of_pin(pinned)));
    DIFFUSIOND_ASSIGN_OR_RETURN(on_device, prepare_device(model_id, *e, activation_bytes(*e), where));
  } else {
    const auto room_of = [&](const Model& m) -> absl::StatusOr<CallRoom> {
      DIFFUSIOND_ASSIGN_OR_RETURN(const TextEncoder* e, encoder_of(m));
      return CallRoom{activation_bytes(*e), absl::StrCat("the encoding of \"", bounded(model_id), "\"")};
    };
    DIFFUSIOND_ASSIGN_OR_RETURN(PinnedRoom room, pin_with_room(model_id, room_of, job, evicted));
    pinned = std::move(room.pin);
    activations = std::move(room.reservation);
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const TextEncoder* admitted, encoder_of(model_of_pin(pinned)));
  const TextEncoder& encoder = *admitted;
  absl::StatusOr<EncodedText> encoded;
  {
    std::optional<DeviceForward> source;
    if (on_device.has_value()) source.emplace(*on_device->placement.as<DevicePlacement>());
    CancellationScope scope(job.token());
    ActivationArenaScope arena(activations.reserved_bytes());
    encoded = status_of("the text encoding", [&]() -> absl::StatusOr<EncodedText> {
      DIFFUSIOND_ASSIGN_OR_RETURN(EncodedText out, encoder.encode(request));
      // The caller's tensors live in RAM, wherever the encoder ran.
      for (torch::Tensor* t : {&out.hidden_states, &out.attention_mask, &out.pooled}) {
        if (t->defined()) *t = t->to(torch::kCPU);
      }
      return out;
    });
  }
  if (on_device.has_value()) on_device->report_streamed(where);
  return encoded;
}

absl::StatusOr<torch::Tensor> Engine::decode_image(const std::string& model_id, const torch::Tensor& latents,
                                                   const CancellationToken& cancel, std::vector<std::string>* evicted,
                                                   CallDevice* where) {
  Job job(this, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(admit(job));
  // The wrong model or misshapen latents are refused by room_of, before
  // any wait for room.
  const auto decoder_of = [&](const Model& m) -> absl::StatusOr<const ImageDecoder*> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* d,
                                component_as<ImageDecoder>(m, model_id, "an image decoder (VAE)"));
    if (absl::Status checked = d->check_latents(latents); !checked.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("VAE \"", bounded(model_id), "\": ", checked.message()));
    }
    return d;
  };
  // Whole when that fits now, else tile by tile, as diffusers'
  // enable_tiling(), waiting in line for room if work in flight holds it.
  bool tiled = false;
  Pin pinned;
  Reservation activations;
  std::optional<DeviceRun> on_device;
  if (vram_ != nullptr) {
    // On a device the same choice against the VRAM budget: untiled when
    // its activations fit beside a placement, else tiled.
    DIFFUSIOND_ASSIGN_OR_RETURN(pinned, pin(model_id));
    DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* d, decoder_of(model_of_pin(pinned)));
    absl::StatusOr<std::optional<DeviceRun>> untiled =
        prepare_device(model_id, *d, d->decode_activation_bytes(latents, false), where);
    if (absl::IsResourceExhausted(untiled.status())) {
      tiled = true;
      absl::StatusOr<std::optional<DeviceRun>> tiled_run =
          prepare_device(model_id, *d, d->decode_activation_bytes(latents, true), where);
      if (absl::IsResourceExhausted(tiled_run.status())) {
        return absl::ResourceExhaustedError(absl::StrCat("an untiled decode: ", untiled.status().message(),
                                                         "; a tiled decode: ", tiled_run.status().message()));
      }
      untiled = std::move(tiled_run);
    }
    if (!untiled.ok()) return untiled.status();
    on_device = std::move(*untiled);
  } else {
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
    pinned = std::move(room->pin);
    activations = std::move(room->reservation);
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* admitted, decoder_of(model_of_pin(pinned)));
  const ImageDecoder& decoder = *admitted;
  absl::StatusOr<torch::Tensor> pixels;
  {
    std::optional<DeviceForward> source;
    if (on_device.has_value()) source.emplace(*on_device->placement.as<DevicePlacement>());
    CancellationScope scope(job.token());
    ActivationArenaScope arena(activations.reserved_bytes());
    pixels = status_of("the decode", [&]() -> absl::StatusOr<torch::Tensor> {
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor image, decoder.decode_latents(latents, tiled));
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor rgb, image_to_uint8(image));
      return rgb[0];
    });
  }
  if (on_device.has_value()) on_device->report_streamed(where);
  return pixels;
}

}  // namespace diffusiond
