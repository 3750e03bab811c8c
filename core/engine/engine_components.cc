// Engine operations on the components of a pipeline other than the
// denoiser: text encoders and VAEs.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/engine.h"
#include "core/engine/internal/engine_job.h"
#include "core/models/vae/image_postprocess.h"
#include "core/models/vae/vae_memory.h"
#include "core/models/vae/vae_model.h"
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

absl::StatusOr<EncodedPrompt> Engine::encode_prompt(const std::string& model_id, const std::string& prompt,
                                                    const CancellationToken& cancel) {
  Job job(this, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(admit(job));
  DIFFUSIOND_ASSIGN_OR_RETURN(auto pinned, pin_as<TextEncoder>(model_id, "a text encoder"));
  CancellationScope scope(job.token());
  return status_of("the prompt encoding", [&] { return pinned.second->encode_prompt(prompt); });
}

absl::StatusOr<torch::Tensor> Engine::decode_image(const std::string& model_id, const torch::Tensor& latents,
                                                  const CancellationToken& cancel) {
  Job job(this, cancel);
  DIFFUSIOND_RETURN_IF_ERROR(admit(job));
  DIFFUSIOND_ASSIGN_OR_RETURN(auto pinned, pin_as<VaeModel>(model_id, "a VAE"));
  const VaeModel& vae = *pinned.second;
  const VaeConfig& config = vae.config();
  const torch::Tensor z = latents.dim() == 3 ? latents.unsqueeze(0) : latents;
  if (z.dim() != 4 || z.size(0) != 1 || z.size(1) != config.latent_channels || z.size(2) < 1 || z.size(3) < 1 ||
      !z.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat("latents for VAE \"", bounded(model_id), "\" must be a float [",
                                                   config.latent_channels, ", h, w], got [",
                                                   absl::StrJoin(latents.sizes(), ", "), "]"));
  }
  const int64_t element = torch::elementSize(compute_dtype(vae));
  std::optional<VaeTiling> tiling;
  absl::StatusOr<Reservation> room =
      cache_->make_room(vae_decode_activation_bytes(config, 1, z.size(2), z.size(3), element, tiling), Device::kCpu);
  if (!room.ok()) {
    tiling = default_vae_tiling(config);
    absl::StatusOr<Reservation> tiled = cache_->make_room(
        vae_decode_activation_bytes(config, 1, z.size(2), z.size(3), element, tiling), Device::kCpu);
    if (!tiled.ok()) {
      return absl::ResourceExhaustedError(absl::StrCat("no room to decode: untiled: ", room.status().message(),
                                                       "; tiled: ", tiled.status().message()));
    }
    room = std::move(tiled);
  }
  CancellationScope scope(job.token());
  return status_of("the decode", [&]() -> absl::StatusOr<torch::Tensor> {
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor image, vae.decode(z, tiling));
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor pixels, image_to_uint8(image));
    return pixels[0];
  });
}

}  // namespace diffusiond
