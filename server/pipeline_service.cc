#include "server/pipeline_service.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/describe_model.h"
#include "core/image/png.h"
#include "core/util/bounded_text.h"
#include "core/pipeline/image_inputs.h"
#include "core/pipeline/prompt_encoding.h"
#include "core/util/status_macros.h"
#include "server/cancellable_reactor.h"
#include "server/event_stream.h"
#include "server/grpc_status.h"
#include "server/request_checks.h"
#include "server/request_options.h"
#include "server/video_stream_sink.h"
#include "server/wire_tensor.h"

namespace diffusiond {
namespace {

// An image input given as PNG bytes or as a tensor (`field` and
// "<field>_tensor"), as float [rank dims] in [0, 1] (image_inputs.h):
// undefined when neither is given.
absl::StatusOr<torch::Tensor> image_input(const std::string& png, const v1::Tensor* tensor, absl::string_view field,
                                          int64_t rank) {
  if (!png.empty() && tensor != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("give ", field, " or ", field, "_tensor, not both"));
  }
  if (!png.empty()) return rank == 3 ? image_from_png(png, field) : mask_from_png(png, field);
  if (tensor == nullptr) return torch::Tensor();
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor t, from_wire(*tensor, absl::StrCat(field, "_tensor")));
  return squeeze_leading(t, rank);
}

// padding_mask_crop with the PNGs it crops (mask_crop.h): refused, naming
// the field, when negative, without both PNGs, or with a tensor input.
absl::StatusOr<MaskCrop> mask_crop_input(const v1::GenerateRequest& wire) {
  if (wire.padding_mask_crop() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("padding_mask_crop must be >= 0 pixels (unset: no crop), got ", wire.padding_mask_crop()));
  }
  if (wire.has_image_tensor() || wire.has_mask_tensor()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "padding_mask_crop takes image and mask_image as PNG bytes, not ",
        wire.has_image_tensor() ? "image_tensor" : "mask_tensor",
        ": upstream crops PIL images only (get_crop_region, the fill resize and apply_overlay are Pillow's)"));
  }
  if (wire.image().empty()) return absl::InvalidArgumentError("padding_mask_crop needs image (the init image it crops)");
  if (wire.mask_image().empty()) {
    return absl::InvalidArgumentError("padding_mask_crop needs mask_image (it crops around the mask)");
  }
  MaskCrop crop;
  crop.padding = wire.padding_mask_crop();
  DIFFUSIOND_ASSIGN_OR_RETURN(crop.image, pil_image_from_png(wire.image(), "image"));
  DIFFUSIOND_ASSIGN_OR_RETURN(crop.mask, pil_image_from_png(wire.mask_image(), "mask_image"));
  return crop;
}

// Encodes uint8 pixels [H, W, 3] as the API's Image.
absl::Status to_wire_image(const torch::Tensor& pixels, uint64_t seed, const PngText& text, v1::Image* image) {
  const torch::Tensor rgb = pixels.contiguous();
  DIFFUSIOND_ASSIGN_OR_RETURN(std::string png, encode_png(rgb.data_ptr<uint8_t>(), rgb.size(1), rgb.size(0), text));
  image->set_png(std::move(png));
  image->set_width(static_cast<int32_t>(rgb.size(1)));
  image->set_height(static_cast<int32_t>(rgb.size(0)));
  image->set_seed(seed);
  return absl::OkStatus();
}

// OK when a Decode's `latents` are one image in `vae`'s latent space:
// [C, h, w] or [1, C, h, w], and for a video VAE [C, 1, h, w] (one frame;
// a video's latents are Generate's to decode). INVALID_ARGUMENT naming
// both otherwise, and for a model that is no VAE.
absl::Status check_decode_latents(const ModelInfo& vae, const std::string& name, const torch::Tensor& latents) {
  const LatentGeometry& g = vae.geometry;
  if (vae.role != ModelRole::kVae || g.spatial_factor <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("vae: \"", bounded(name), "\" is a ",
                                                   model_role_name(vae.role), " (", vae.architecture, "), not a VAE"));
  }
  const bool video = g.temporal_factor > 0;
  const int64_t rank = latents.dim();
  const bool one_frame = video && rank == 4 && latents.size(0) == g.channels && latents.size(1) == 1;
  const bool image = rank == 3 ? latents.size(0) == g.channels
                               : rank == 4 && latents.size(0) == 1 && latents.size(1) == g.channels;
  if (one_frame || image) return absl::OkStatus();
  const bool frames = video && rank == 4 && latents.size(0) == g.channels;
  return absl::InvalidArgumentError(absl::StrCat(
      "latents are [", absl::StrJoin(latents.sizes(), ", "), "], but VAE \"", bounded(name), "\" (",
      vae.architecture, ") decodes one image from [", g.channels, ", h, w]", video ? absl::StrCat(" or [", g.channels, ", 1, h, w]") : "",
      frames ? ": a video's latents [C, F, h, w] are decoded by Generate" : "", "; nothing was loaded"));
}

v1::GenerateProgress::Stage stage_to_wire(GenerateEvent::Stage stage) {
  switch (stage) {
    case GenerateEvent::Stage::kLoad: return v1::GenerateProgress::STAGE_LOAD;
    case GenerateEvent::Stage::kEvict: return v1::GenerateProgress::STAGE_EVICT;
    case GenerateEvent::Stage::kEncode: return v1::GenerateProgress::STAGE_ENCODE;
    case GenerateEvent::Stage::kDenoise: return v1::GenerateProgress::STAGE_DENOISE;
    case GenerateEvent::Stage::kDecode: return v1::GenerateProgress::STAGE_DECODE;
  }
  return v1::GenerateProgress::STAGE_UNSPECIFIED;
}

// The stage's label in diffusiond_generate_stage_seconds; empty for an
// eviction, which is an event rather than time spent.
absl::string_view stage_label(GenerateEvent::Stage stage) {
  return stage == GenerateEvent::Stage::kEvict ? "" : generate_stage_name(stage);
}

// Runs `work` on the compute queue with the client's token and finishes
// `reactor` with its status.
void run_unary(const ServiceDeps& deps, CancellableUnaryReactor* reactor,
               std::function<absl::Status(const GenerateOptions&)> work) {
  absl::Status queued = deps.compute_queue->submit([reactor, work = std::move(work)] {
    GenerateOptions options;
    options.cancel = reactor->token();
    if (options.cancel.cancelled()) {
      reactor->Finish(to_grpc_status(absl::CancelledError("the call was cancelled before it ran")));
      return;
    }
    reactor->Finish(to_grpc_status(work(options)));
  });
  if (!queued.ok()) {
    deps.metrics->count_queue_rejection("compute");
    reactor->Finish(to_grpc_status(queued));
  }
}

}  // namespace

absl::StatusOr<GenerateRequest> generate_request(const v1::GenerateRequest& wire) {
  DIFFUSIOND_RETURN_IF_ERROR(check_generate_request(wire));
  GenerateRequest r;
  r.pipeline = wire.pipeline();
  for (const auto& [name, alias] : {std::pair<const char*, const std::string*>{"text_encoder", &wire.text_encoder()},
                                    {"transformer", &wire.transformer()},
                                    {"vae", &wire.vae()}}) {
    if (!alias->empty()) r.components[name] = *alias;
  }
  for (const auto& [name, id] : wire.components()) r.components[name] = id;
  r.prompt = wire.prompt();
  r.negative_prompt = wire.negative_prompt();
  r.width = wire.width();
  r.height = wire.height();
  r.steps = wire.steps();
  if (wire.has_guidance_scale()) r.guidance_scale = wire.guidance_scale();
  if (wire.legacy_guidance_scale() != 0) r.legacy_guidance_scale = wire.legacy_guidance_scale();
  r.true_cfg_scale = wire.true_cfg_scale();
  for (const auto& [name, o] : wire.component_options()) {
    ComponentOptions& options = r.component_options[name];
    DIFFUSIOND_ASSIGN_OR_RETURN(options.fp8, fp8_from_wire(o.fp8()));
    DIFFUSIOND_ASSIGN_OR_RETURN(options.compute_dtype, compute_dtype_from_wire(o.compute_dtype()));
  }
  r.seed = wire.seed();
  r.shift = wire.shift();
  if (wire.has_padding_mask_crop()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(r.padding_mask_crop, mask_crop_input(wire));
  } else {
    DIFFUSIOND_ASSIGN_OR_RETURN(r.image, image_input(wire.image(),
                                                     wire.has_image_tensor() ? &wire.image_tensor() : nullptr, "image", 3));
    DIFFUSIOND_ASSIGN_OR_RETURN(r.mask_image, image_input(wire.mask_image(),
                                                          wire.has_mask_tensor() ? &wire.mask_tensor() : nullptr,
                                                          "mask_image", 2));
  }
  r.strength = wire.strength();
  r.num_images_per_prompt = wire.num_images_per_prompt();
  r.seeds.assign(wire.seeds().begin(), wire.seeds().end());
  r.sigmas.assign(wire.sigmas().begin(), wire.sigmas().end());
  r.max_sequence_length = wire.max_sequence_length();
  r.num_frames = wire.num_frames();
  if (wire.has_guidance_scale_2()) r.guidance_scale_2 = wire.guidance_scale_2();
  DIFFUSIOND_ASSIGN_OR_RETURN(r.adapters, adapters_from_wire(wire.adapters()));
  return r;
}

grpc::ServerUnaryReactor* PipelineServiceImpl::EncodePrompt(grpc::CallbackServerContext*,
                                                            const v1::EncodePromptRequest* request,
                                                            v1::EncodePromptResponse* response) {
  auto* reactor = new CancellableUnaryReactor();
  if (absl::Status checked = check_encode_prompt_request(*request); !checked.ok()) {
    reactor->Finish(to_grpc_status(checked));
    return reactor;
  }
  PromptRequest prompt;
  prompt.text_encoder = request->text_encoder();
  prompt.prompt = request->prompt();
  prompt.pipeline = request->pipeline();
  run_unary(deps_, reactor, [deps = deps_, models_dir = models_dir_, prompt = std::move(prompt),
                             response](const GenerateOptions& options) -> absl::Status {
    DIFFUSIOND_ASSIGN_OR_RETURN(EncodedPrompt encoded, encode_prompt(*deps.engine, models_dir, prompt, options));
    for (const auto& [name, tensor] : encoded.conditioning.tensors) {
      v1::NamedTensor* out = response->mutable_conditioning()->add_tensors();
      out->set_name(name);
      DIFFUSIOND_RETURN_IF_ERROR(to_wire(tensor, out->mutable_tensor()));
    }
    for (const auto& [name, value] : encoded.conditioning.scalars) {
      (*response->mutable_conditioning()->mutable_scalars())[name] = value;
    }
    response->set_tokens(static_cast<int32_t>(encoded.tokens));
    return absl::OkStatus();
  });
  return reactor;
}

grpc::ServerUnaryReactor* PipelineServiceImpl::Decode(grpc::CallbackServerContext*,
                                                      const v1::DecodeRequest* request, v1::Image* response) {
  auto* reactor = new CancellableUnaryReactor();
  if (absl::Status checked = check_decode_request(*request); !checked.ok()) {
    reactor->Finish(to_grpc_status(checked));
    return reactor;
  }
  absl::StatusOr<torch::Tensor> latents = from_wire(request->latents(), "latents");
  if (!latents.ok()) {
    reactor->Finish(to_grpc_status(latents.status()));
    return reactor;
  }
  run_unary(deps_, reactor, [deps = deps_, request, response,
                             latents = *std::move(latents)](const GenerateOptions& options) -> absl::Status {
    // Described, not loaded: latents the VAE could never decode are
    // refused before any load.
    DIFFUSIOND_ASSIGN_OR_RETURN(const ModelInfo info, describe_model(*deps.engine, ModelLoadRequest{request->vae()}));
    DIFFUSIOND_RETURN_IF_ERROR(check_decode_latents(info, request->vae(), latents));
    DIFFUSIOND_ASSIGN_OR_RETURN(const ModelHandle vae,
                                ready_component(*deps.engine, ModelLoadRequest{request->vae()}, ModelRole::kVae, options));
    DIFFUSIOND_ASSIGN_OR_RETURN(CallResult<torch::Tensor> decoded,
                                deps.engine->decode_image(vae, latents, options.cancel));
    return to_wire_image(decoded.value, 0, {}, response);
  });
  return reactor;
}

grpc::ServerWriteReactor<v1::GenerateEvent>* PipelineServiceImpl::Generate(grpc::CallbackServerContext*,
                                                                          const v1::GenerateRequest* wire) {
  auto* stream = new EventStream<v1::GenerateEvent>();
  absl::StatusOr<GenerateRequest> request = generate_request(*wire);
  if (!request.ok()) {
    stream->finish(to_grpc_status(request.status()));
    return stream;
  }
  const ServiceDeps deps = deps_;
  absl::Status queued = deps.compute_queue->submit([deps, stream, models_dir = models_dir_,
                                                    request = *std::move(request),
                                                    video_format = wire->video_format()] {
    GenerateOptions options;
    options.cancel = stream->token();
    options.on_event = [&](const GenerateEvent& e) {
      v1::GenerateEvent event;
      v1::GenerateProgress* p = event.mutable_progress();
      p->set_stage(stage_to_wire(e.stage));
      p->set_model_id(e.model_id);
      p->set_step(e.step);
      p->set_steps(e.steps);
      p->set_seconds(absl::ToDoubleSeconds(e.time));
      p->set_detail(e.detail);
      p->set_device(e.device);
      p->set_image(e.image);
      if (e.stage == GenerateEvent::Stage::kDenoise) deps.metrics->observe_step(e.model_id, e.time);
      if (absl::string_view stage = stage_label(e.stage); !stage.empty()) {
        deps.metrics->observe_generate_stage(stage, e.time);
        if (!e.device.empty()) deps.metrics->count_generate_stage_device(stage, e.device);
      }
      stream->send(std::move(event));
    };
    // Each image goes out as soon as it is decoded.
    absl::Status sent;
    options.on_image = [&](GeneratedImage image) {
      if (!sent.ok()) return;
      v1::GenerateEvent event;
      sent = to_wire_image(image.pixels, image.seed, image.parameters, event.mutable_image());
      event.mutable_image()->set_index(image.index);
      if (sent.ok()) stream->send(std::move(event));
    };
    VideoStreamSink video(video_format, [&](v1::GenerateEvent event) { stream->send(std::move(event)); });
    options.video = &video;
    absl::Status status = generate_images(*deps.engine, models_dir, request, options).status();
    if (status.ok()) status = sent;
    if (absl::IsCancelled(status) || stream->cancelled()) deps.metrics->count_cancellation("generate");
    stream->finish(to_grpc_status(status));
  });
  if (!queued.ok()) {
    deps.metrics->count_queue_rejection("compute");
    stream->finish(to_grpc_status(queued));
  }
  return stream;
}

}  // namespace diffusiond
