// Engine operations on the components of a pipeline other than the
// denoiser: text encoders, text conditioners and VAEs. With a device they run there, placed
// by the rule denoisers follow (device_placer.h); their outputs come
// back to RAM.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/engine.h"
#include "core/engine/internal/call_scope.h"
#include "core/models/image_decoder.h"
#include "core/models/text_conditioner.h"
#include "core/models/text_encoder.h"
#include "core/models/vae/image_postprocess.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

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

}  // namespace

absl::StatusOr<CallResult<EncodedText>> Engine::encode_text(const ModelHandle& handle, const TextEncoding& request,
                                                            const CancellationToken& cancel,
                                                            const TextEncoderAdapters& adapters) {
  const std::string& model_id = handle.id();
  Job job(&gate_, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  CallResult<EncodedText> out;
  // The adapters first, as a denoise admits them (for the denoiser they
  // were made for), so a bad one costs no activation room.
  AdmittedAdapters held;
  std::vector<std::string> adapters_evicted;
  if (!adapters.adapters.empty()) {
    AdapterReport report;
    absl::StatusOr<AdmittedAdapters> admitted = admit_adapters_described(
        adapters.denoiser, handle.info().bytes[kCpuIndex], adapters.adapters, job, &report);
    adapters_evicted = std::move(report.evicted);
    out.report.adapters_loaded = std::move(report.loaded);
    if (!admitted.ok()) return admitted.status();
    held = *std::move(admitted);
  }
  const auto encoder_of = [&](const Model& m) { return component_as<TextEncoder>(m, model_id, "a text encoder"); };
  const auto activation_bytes = [&](const Model& m) -> absl::StatusOr<int64_t> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const TextEncoder* e, encoder_of(m));
    return e->request_activation_bytes(request);
  };
  CallNeeds needs;
  needs.cpu_room = [&](const Model& m) -> absl::StatusOr<CallRoom> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t bytes, activation_bytes(m));
    // Beside the activations and the adapters' working share of them, the
    // A and B copies for_text_encoder makes at the encoder's dtype, which
    // live as long as the call.
    return CallRoom{with_adapter_working_memory(bytes, held) +
                        AdapterSet::text_encoder_conversion_bytes(m, held.adapters, adapters.component),
                    absl::StrCat("the encoding of \"", bounded(model_id), "\"")};
  };
  needs.device_bytes = [&](const Model& m) -> absl::StatusOr<int64_t> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t bytes, activation_bytes(m));
    return with_adapter_working_memory(bytes, held);
  };
  // The call's scope writes what its run streams into out.report.where.
  absl::StatusOr<CallScope> call = admit_call(handle, needs, job, &out.report);
  out.report.evicted.insert(out.report.evicted.begin(), adapters_evicted.begin(), adapters_evicted.end());
  if (!call.ok()) return call.status();
  DIFFUSIOND_ASSIGN_OR_RETURN(const TextEncoder* encoder, encoder_of(call->model()));
  std::unique_ptr<AdapterSet> set;
  if (!held.adapters.empty()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(set, AdapterSet::for_text_encoder(call->model(), held.adapters, adapters.component));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(out.value, call->run("the text encoding", [&]() -> absl::StatusOr<EncodedText> {
    DIFFUSIOND_ASSIGN_OR_RETURN(EncodedText encoded,
                                run_with_adapters(set.get(), [&] { return encoder->encode(request); }));
    // The caller's tensors live in RAM, wherever the encoder ran.
    for (torch::Tensor* t : {&encoded.hidden_states, &encoded.attention_mask, &encoded.pooled}) {
      if (t->defined()) *t = t->to(torch::kCPU);
    }
    return encoded;
  }));
  return out;
}

absl::StatusOr<CallResult<ConditionedText>> Engine::condition_text(const ModelHandle& handle,
                                                                   const ConditionerRequest& request,
                                                                   const CancellationToken& cancel) {
  const std::string& model_id = handle.id();
  Job job(&gate_, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  const auto conditioner_of = [&](const Model& m) {
    return component_as<TextConditioner>(m, model_id, "a text conditioner");
  };
  const auto activation_bytes = [&](const Model& m) -> absl::StatusOr<int64_t> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const TextConditioner* c, conditioner_of(m));
    return c->request_activation_bytes(request);
  };
  CallNeeds needs;
  needs.cpu_room = [&](const Model& m) -> absl::StatusOr<CallRoom> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t bytes, activation_bytes(m));
    return CallRoom{bytes, absl::StrCat("the conditioning of \"", bounded(model_id), "\"")};
  };
  needs.device_bytes = activation_bytes;
  CallResult<ConditionedText> out;
  DIFFUSIOND_ASSIGN_OR_RETURN(CallScope call, admit_call(handle, needs, job, &out.report));
  DIFFUSIOND_ASSIGN_OR_RETURN(const TextConditioner* conditioner, conditioner_of(call.model()));
  DIFFUSIOND_ASSIGN_OR_RETURN(out.value, call.run("the text conditioning", [&]() -> absl::StatusOr<ConditionedText> {
    DIFFUSIOND_ASSIGN_OR_RETURN(ConditionedText conditioned, conditioner->condition(request));
    // The caller's tensors live in RAM, wherever the conditioner ran.
    conditioned.hidden_states = conditioned.hidden_states.to(torch::kCPU);
    return conditioned;
  }));
  return out;
}

// Runs `work` on VAE `handle` after admitting the activations of a decode
// of `latents` (an encode of the image they come from reserves the same:
// the decoder is the larger network at every resolution): whole when that
// fits, else tile by tile, as diffusers' enable_tiling(), in RAM or against
// the VRAM budget alike. `what` names the call ("decode", "encode").
absl::StatusOr<CallResult<torch::Tensor>> Engine::vae_call(
    const ModelHandle& handle, const torch::Tensor& latents, const CancellationToken& cancel, absl::string_view what,
    bool streamed, const std::function<absl::StatusOr<torch::Tensor>(const ImageDecoder&, bool tiled)>& work) {
  const std::string& model_id = handle.id();
  Job job(&gate_, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(job.status());
  // The wrong model or misshapen latents are refused by the needs, before
  // any wait for room.
  const auto decoder_of = [&](const Model& m) -> absl::StatusOr<const ImageDecoder*> {
    DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* d,
                                component_as<ImageDecoder>(m, model_id, "an image decoder (VAE)"));
    if (absl::Status checked = d->check_latents(latents); !checked.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("VAE \"", bounded(model_id), "\": ", checked.message()));
    }
    return d;
  };
  const auto bytes_of = [streamed, &latents](const ImageDecoder& d, bool tiled) {
    return streamed ? d.latent_frames_activation_bytes(latents, tiled) : d.decode_activation_bytes(latents, tiled);
  };
  const auto needs_of = [&](bool tiled) {
    CallNeeds needs;
    needs.cpu_room = [&, tiled](const Model& m) -> absl::StatusOr<CallRoom> {
      DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* d, decoder_of(m));
      return CallRoom{bytes_of(*d, tiled),
                      absl::StrCat(tiled ? "a tiled " : "an untiled ", what, " with \"", bounded(model_id), "\"")};
    };
    needs.device_bytes = [&, tiled](const Model& m) -> absl::StatusOr<int64_t> {
      DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* d, decoder_of(m));
      return bytes_of(*d, tiled);
    };
    // Whole only when that fits now; tile by tile waits in line for room
    // that work in flight holds.
    needs.wait = tiled;
    return needs;
  };
  bool tiled = false;
  CallResult<torch::Tensor> out;
  absl::StatusOr<CallScope> call = admit_call(handle, needs_of(false), job, &out.report);
  if (absl::IsResourceExhausted(call.status())) {
    tiled = true;
    absl::StatusOr<CallScope> tiled_call = admit_call(handle, needs_of(true), job, &out.report);
    if (absl::IsResourceExhausted(tiled_call.status())) {
      return absl::ResourceExhaustedError(absl::StrCat("an untiled ", what, ": ", call.status().message(), "; a tiled ",
                                                       what, ": ", tiled_call.status().message()));
    }
    call = std::move(tiled_call);
  }
  if (!call.ok()) return call.status();
  DIFFUSIOND_ASSIGN_OR_RETURN(const ImageDecoder* decoder, decoder_of(call->model()));
  DIFFUSIOND_ASSIGN_OR_RETURN(out.value, call->run(absl::StrCat("the ", what), [&]() -> absl::StatusOr<torch::Tensor> {
    return work(*decoder, tiled);
  }));
  return out;
}

absl::StatusOr<CallResult<torch::Tensor>> Engine::decode_image(const ModelHandle& handle,
                                                               const torch::Tensor& latents,
                                                               const CancellationToken& cancel) {
  return vae_call(handle, latents, cancel, "decode", /*streamed=*/false,
                  [&](const ImageDecoder& decoder, bool tiled) -> absl::StatusOr<torch::Tensor> {
                    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor image, decoder.decode_latents(latents, tiled));
                    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor rgb, image_to_uint8(image));
                    return rgb[0];
                  });
}

absl::StatusOr<CallResult<int64_t>> Engine::decode_video(const ModelHandle& handle, const torch::Tensor& latents,
                                                         const VideoFrameSink& on_frame,
                                                         const CancellationToken& cancel) {
  int64_t frames = 0;
  DIFFUSIOND_ASSIGN_OR_RETURN(
      CallResult<torch::Tensor> decoded,
      vae_call(handle, latents, cancel, "video decode", /*streamed=*/true,
               [&](const ImageDecoder& decoder, bool tiled) -> absl::StatusOr<torch::Tensor> {
                 DIFFUSIOND_RETURN_IF_ERROR(decoder.decode_latent_frames(
                     latents, tiled, [&](const torch::Tensor& chunk, int64_t first) -> absl::Status {
                       for (int64_t i = 0; i < chunk.size(2); ++i) {
                         DIFFUSIOND_ASSIGN_OR_RETURN(const torch::Tensor rgb, image_to_uint8(chunk.select(2, i)));
                         DIFFUSIOND_RETURN_IF_ERROR(on_frame(rgb[0], first + i));
                         ++frames;
                       }
                       return absl::OkStatus();
                     }));
                 return torch::Tensor();
               }));
  CallResult<int64_t> out;
  out.value = frames;
  out.report = std::move(decoded.report);
  return out;
}

absl::StatusOr<CallResult<torch::Tensor>> Engine::encode_image(const ModelHandle& handle, const torch::Tensor& image,
                                                               const torch::Tensor& eps,
                                                               const CancellationToken& cancel) {
  if (image.dim() != 4 || image.size(0) != 1 || image.size(1) != 3 || !image.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat("an image to encode must be a float [1, 3, H, W], got [",
                                                   absl::StrJoin(image.sizes(), ", "), "]"));
  }
  // The latents it encodes to, sized from the handle's geometry: what the
  // admission checks and reserves for.
  const ModelInfo& info = handle.info();
  const int64_t f = info.geometry.spatial_factor;
  if (f <= 0 || image.size(2) % f != 0 || image.size(3) % f != 0) {
    return absl::InvalidArgumentError(absl::StrCat("VAE \"", bounded(handle.id()), "\" encodes images whose sides are "
                                                   "multiples of ", f, ", got ", image.size(3), "x", image.size(2)));
  }
  const torch::Tensor latents = torch::empty({info.geometry.channels, image.size(2) / f, image.size(3) / f});
  if (eps.defined() && (eps.dim() != 4 || eps.sizes().slice(1) != latents.sizes())) {
    return absl::InvalidArgumentError(absl::StrCat("the sample's noise must be [1, ", absl::StrJoin(latents.sizes(), ", "),
                                                   "], got [", absl::StrJoin(eps.sizes(), ", "), "]"));
  }
  return vae_call(handle, latents, cancel, "encode", /*streamed=*/false,
                  [&](const ImageDecoder& decoder, bool tiled) -> absl::StatusOr<torch::Tensor> {
                    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor z, decoder.encode_image(image, eps, tiled));
                    return z.to(torch::kCPU, torch::kFloat32);
                  });
}

}  // namespace diffusiond
