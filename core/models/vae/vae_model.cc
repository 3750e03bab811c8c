#include "core/models/vae/vae_model.h"

#include <torch/utils.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/vae/vae_network.h"
#include "core/models/vae/vae_params.h"
#include "core/util/exception_status.h"

namespace diffusiond {

absl::StatusOr<std::unique_ptr<VaeModel>> VaeModel::create(const VaeConfig& config,
                                                           std::unique_ptr<WeightStore> weights) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  const std::vector<ParamSpec> table = vae_parameter_table(config);
  for (const ParamSpec& p : table) {
    const torch::Tensor* dense = weights->dense(p.name);
    const Fp8Weight* fp8 = weights->fp8(p.name);
    if (dense == nullptr && fp8 == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("VAE checkpoint lacks parameter '", p.name, "'"));
    }
    const torch::IntArrayRef shape = dense != nullptr ? dense->sizes() : fp8->codes.sizes();
    if (shape != torch::IntArrayRef(p.shape)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "VAE parameter '", p.name, "' has shape [", absl::StrJoin(shape, ", "),
          "], but the config expects [", absl::StrJoin(p.shape, ", "), "]"));
    }
  }
  if (weights->size() != static_cast<int64_t>(table.size())) {
    std::set<std::string> known;
    for (const ParamSpec& p : table) known.insert(p.name);
    for (const std::string& name : weights->names()) {
      if (known.count(name) == 0) {
        return absl::FailedPreconditionError(absl::StrCat("VAE checkpoint has unexpected tensor '", name, "'"));
      }
    }
  }
  return std::unique_ptr<VaeModel>(new VaeModel(config, std::move(weights)));
}

VaeModel::VaeModel(const VaeConfig& config, std::unique_ptr<WeightStore> weights)
    : ImageDecoder(std::move(weights)), config_(config) {}

absl::Status VaeModel::check_input(const torch::Tensor& t, int64_t channels, const char* what) const {
  if (t.defined() && t.dim() == 4 && t.size(0) >= 1 && t.size(1) == channels && t.size(2) >= 1 &&
      t.size(3) >= 1 && t.is_floating_point()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, " has shape [", t.defined() ? absl::StrJoin(t.sizes(), ", ") : "", "], but the VAE expects a float [B, ",
      channels, ", H, W]"));
}

torch::Tensor VaeModel::run_decoder(const torch::Tensor& z) const {
  return vae_decoder_forward(config_, [this](const std::string& name) { return param(name); }, z,
                             attention_options_);
}

torch::Tensor VaeModel::run_encoder(const torch::Tensor& x) const {
  return vae_encoder_forward(config_, [this](const std::string& name) { return param(name); }, x,
                             attention_options_);
}

absl::StatusOr<torch::Tensor> VaeModel::decode(const torch::Tensor& latents,
                                               const std::optional<VaeTiling>& tiling) const {
  if (absl::Status s = check_input(latents, config_.latent_channels, "the latents"); !s.ok()) return s;
  if (tiling.has_value()) {
    if (absl::Status s = tiling->validate(); !s.ok()) return s;
  }
  return status_of("the VAE decode", [&]() -> absl::StatusOr<torch::Tensor> {
    torch::NoGradGuard no_grad;
    // On a placement's device the latents go there and the image comes back.
    const torch::Device device = forward_device(), home = latents.device();
    // Upstream's order: cast, divide by the scaling factor, add the shift.
    const torch::Tensor z = latents.to(device, compute_dtype(*this)) / config_.scaling_factor + config_.shift_factor;
    const auto decoder = [this](const torch::Tensor& tile) { return run_decoder(tile); };
    if (tiling.has_value() && (z.size(2) > tiling->latent_tile || z.size(3) > tiling->latent_tile)) {
      return run_tiled(z, tiling->latent_tile, tiling->sample_tile, tiling->overlap_factor, decoder).to(home);
    }
    return run_decoder(z).to(home);
  });
}

absl::StatusOr<VaeEncoding> VaeModel::encode(const torch::Tensor& image, const torch::Tensor& eps,
                                             const std::optional<VaeTiling>& tiling) const {
  if (absl::Status s = check_input(image, config_.in_channels, "the image"); !s.ok()) return s;
  if (tiling.has_value()) {
    if (absl::Status s = tiling->validate(); !s.ok()) return s;
  }
  return status_of("the VAE encode", [&]() -> absl::StatusOr<VaeEncoding> {
    torch::NoGradGuard no_grad;
    // On a placement's device the image goes there and the moments come
    // back; what follows is elementwise, on the caller's device.
    const torch::Device device = forward_device(), home = image.device();
    const torch::Tensor x = image.to(device, compute_dtype(*this));
    const auto encoder = [this](const torch::Tensor& tile) { return run_encoder(tile); };
    VaeEncoding e;
    if (tiling.has_value() && (x.size(2) > tiling->sample_tile || x.size(3) > tiling->sample_tile)) {
      e.moments = run_tiled(x, tiling->sample_tile, tiling->latent_tile, tiling->overlap_factor, encoder).to(home);
    } else {
      e.moments = run_encoder(x).to(home);
    }
    const int64_t l = config_.latent_channels;
    e.mean = e.moments.narrow(1, 0, l);
    e.logvar = torch::clamp(e.moments.narrow(1, l, l), -30.0, 20.0);
    e.std = torch::exp(0.5 * e.logvar);
    e.latents_mode = (e.mean - config_.shift_factor) * config_.scaling_factor;
    if (eps.defined()) {
      if (eps.sizes() != e.mean.sizes() || !eps.is_floating_point()) {
        return absl::InvalidArgumentError(absl::StrCat("eps has shape [", absl::StrJoin(eps.sizes(), ", "),
                                                       "], but the mean is [", absl::StrJoin(e.mean.sizes(), ", "), "]"));
      }
      e.sample = e.mean + e.std * eps.to(e.mean.scalar_type());
      e.latents = (e.sample - config_.shift_factor) * config_.scaling_factor;
    }
    return e;
  });
}

}  // namespace diffusiond
