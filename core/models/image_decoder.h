// ImageDecoder: the image-decoder role (a VAE) — latents in pipeline space
// to an image and back, with the geometry a pipeline needs to size its
// latents and the activation bytes the engine reserves before a decode.
// The engine and the pipelines see this role, never a concrete VAE class.
//
// Not here: a VAE's networks (core/models/<arch>/), pixel conversion
// (core/models/vae/image_postprocess.h).
#ifndef DIFFUSIOND_CORE_MODELS_IMAGE_DECODER_H_
#define DIFFUSIOND_CORE_MODELS_IMAGE_DECODER_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/model.h"

namespace diffusiond {

// Takes decoded frames [B, out_channels, n, H, W] at the compute dtype, the
// first being frame `first_frame` of the clip (0 for an image). An error
// stops the decode.
using DecodedFramesSink = std::function<absl::Status(const torch::Tensor& frames, int64_t first_frame)>;

// Immutable after construction; decodes may run concurrently.
class ImageDecoder : public Model {
 public:
  using Model::Model;
  ModelRole role() const final { return ModelRole::kVae; }

  // Latent channels, and image pixels per latent along each side.
  virtual int64_t latent_channels() const = 0;
  virtual int64_t spatial_factor() const = 0;
  // Frames per latent frame after the first, for a video decoder; 0 (the
  // default) for one without a time axis.
  virtual int64_t temporal_factor() const { return 0; }

  // OK when `latents` (a denoiser's output, unbatched, or with a batch of
  // one) is what this decoder decodes; INVALID_ARGUMENT naming the shape it
  // takes otherwise. The rank is the decoder's business: [C, h, w] for an
  // image VAE, [C, f, h, w] for a video one.
  virtual absl::Status check_latents(const torch::Tensor& latents) const = 0;

  // Peak bytes beyond the weights of a decode of latents that passed
  // check_latents(), whole or tile by tile.
  virtual int64_t decode_activation_bytes(const torch::Tensor& latents, bool tiled) const = 0;
  // A Step over latents [B, C, h, w] (or an image [B, 3, H, W] to encode,
  // which reserves what a decode of its latents takes: the decoder is the
  // larger network at every resolution), decoded whole.
  ActivationEstimate step_activations(const NamedTensors& inputs, bool device_is_cpu) const override;

  // Decodes pipeline-space latents that passed check_latents() to an image
  // [1, 3, H, W] in about [-1, 1] at the compute dtype. The token's reason
  // when cancelled between blocks.
  virtual absl::StatusOr<torch::Tensor> decode_latents(const torch::Tensor& latents, bool tiled) const = 0;

  // Decodes latents that passed check_latents() as decode_latents() does,
  // handing the frames to `sink` as they are made, so a video's frames are
  // never all held: a video VAE hands each latent frame's frames in order.
  // Errors as decode_latents(), or the sink's. Default: the one image of
  // decode_latents() as one frame.
  virtual absl::Status decode_latent_frames(const torch::Tensor& latents, bool tiled,
                                            const DecodedFramesSink& sink) const;
  // Peak bytes beyond the weights of decode_latent_frames(). Default:
  // decode_activation_bytes().
  virtual int64_t latent_frames_activation_bytes(const torch::Tensor& latents, bool tiled) const {
    return decode_activation_bytes(latents, tiled);
  }

  // Encodes an image [1, 3, H, W] in [-1, 1] to pipeline-space latents
  // [1, C, H/f, W/f]: the distribution's sample mean + std·eps when `eps`
  // (shaped like them) is given, as upstream's latent_dist.sample(); else
  // its mode. Errors as decode_latents().
  virtual absl::StatusOr<torch::Tensor> encode_image(const torch::Tensor& image, const torch::Tensor& eps,
                                                     bool tiled) const = 0;
};

// A VAE Step's named inputs, checked: exactly one of "latents" (decode) or
// "image" (encode, with an optional "eps"), and an optional one-element
// "tiled". Every VAE's step() reads them so.
struct VaeStepInputs {
  bool decoding = false;
  torch::Tensor input;  // the latents or the image
  torch::Tensor eps;    // encode only; undefined when not given
  bool tiled = false;
};

// INVALID_ARGUMENT naming the shapes a VAE takes (`latents_shape`,
// `image_shape`, e.g. "[B, L, h, w]") for a missing, doubled or unexpected
// input, or a "tiled" that is not one element.
absl::StatusOr<VaeStepInputs> read_vae_step_inputs(const NamedTensors& inputs, absl::string_view latents_shape,
                                                   absl::string_view image_shape);

// An encode's outputs as a Step names them: "moments", "mean", "logvar",
// "std", "latents_mode", and with a sample "sample" and "latents".
template <typename Encoding>
NamedTensors vae_encoding_outputs(const Encoding& e) {
  NamedTensors out{{"moments", e.moments}, {"mean", e.mean}, {"logvar", e.logvar}, {"std", e.std},
                   {"latents_mode", e.latents_mode}};
  if (e.sample.defined()) {
    out["sample"] = e.sample;
    out["latents"] = e.latents;
  }
  return out;
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_IMAGE_DECODER_H_
