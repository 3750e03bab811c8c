#include "core/pipeline/image_inputs.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/image/png.h"
#include "core/pipeline/generate.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

absl::StatusOr<DecodedPng> decode_input(absl::string_view png, absl::string_view field) {
  absl::StatusOr<DecodedPng> decoded = decode_png(png, kGenerateMaxSide * kGenerateMaxSide);
  if (!decoded.ok()) {
    return absl::Status(decoded.status().code(), absl::StrCat(field, ": ", decoded.status().message()));
  }
  if (decoded->width > kGenerateMaxSide || decoded->height > kGenerateMaxSide) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", decoded->width, "x", decoded->height,
                                                   " pixels, more than ", kGenerateMaxSide, " on a side"));
  }
  return decoded;
}

// `decoded`'s pixels as uint8 [H, W, 3] (a view of its buffer).
torch::Tensor rgb_of(DecodedPng& decoded) {
  return torch::from_blob(decoded.rgb.data(), {decoded.height, decoded.width, 3}, torch::kUInt8);
}

absl::Status check_float_input(const torch::Tensor& t, int64_t rank, absl::string_view expected,
                               absl::string_view field) {
  const auto shape = [&] { return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]"); };
  if (!t.defined() || t.dim() != rank || !t.is_floating_point() || (rank == 3 && t.size(0) != 3)) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be a float ", expected, " tensor, got ",
                                                   t.defined() ? shape() : std::string("none")));
  }
  for (int64_t side : {t.size(-2), t.size(-1)}) {
    if (side < 1 || side > kGenerateMaxSide) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " ", shape(), ": each side must be 1 to ", kGenerateMaxSide, " pixels"));
    }
  }
  const torch::Tensor f = t.to(torch::kFloat32);
  if (!torch::isfinite(f).all().item<bool>() || f.min().item<float>() < 0.0f || f.max().item<float>() > 1.0f) {
    return absl::InvalidArgumentError(absl::StrCat(field, " values must be finite and in [0, 1], got ",
                                                   f.min().item<float>(), " to ", f.max().item<float>()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<torch::Tensor> image_from_png(absl::string_view png, absl::string_view field) {
  DIFFUSIOND_ASSIGN_OR_RETURN(DecodedPng decoded, decode_input(png, field));
  return rgb_of(decoded).permute({2, 0, 1}).to(torch::kFloat32) / 255.0f;
}

absl::StatusOr<torch::Tensor> mask_from_png(absl::string_view png, absl::string_view field) {
  DIFFUSIOND_ASSIGN_OR_RETURN(DecodedPng decoded, decode_input(png, field));
  const torch::Tensor rgb = rgb_of(decoded).to(torch::kInt64);
  const torch::Tensor grey = (rgb.select(2, 0) * 19595 + rgb.select(2, 1) * 38470 + rgb.select(2, 2) * 7471 + 32768)
                                 .div(65536, "floor");
  return grey.to(torch::kFloat32) / 255.0f;
}

absl::StatusOr<PilImage> pil_image_from_png(absl::string_view png, absl::string_view field) {
  DIFFUSIOND_ASSIGN_OR_RETURN(DecodedPng decoded, decode_input(png, field));
  const bool grey = decoded.color_type == kPngColorGrey, rgb = decoded.color_type == kPngColorRgb;
  if (!(grey || rgb) || decoded.bit_depth != 8 || decoded.has_transparency) {
    const char* type = decoded.color_type == kPngColorPalette      ? "palette"
                       : decoded.color_type == kPngColorGreyAlpha ? "grey and alpha"
                       : decoded.color_type == kPngColorRgba  ? "RGBA"
                       : grey                                             ? "grey"
                                                                          : "RGB";
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": padding_mask_crop takes 8-bit grey or RGB PNGs without transparency (Pillow's \"L\" and \"RGB\", "
        "the modes whose resampling and compositing the daemon reproduces); this one is ", decoded.bit_depth, "-bit ",
        type, decoded.has_transparency ? " with a tRNS chunk" : ""));
  }
  PilImage image = pil_new(grey ? PilMode::kL : PilMode::kRgb, decoded.width, decoded.height);
  if (rgb) {
    image.pixels = std::move(decoded.rgb);
  } else {
    for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = decoded.rgb[i * 3];  // grey was copied to R, G, B
  }
  return image;
}

absl::Status check_image_input(const torch::Tensor& image, absl::string_view field) {
  return check_float_input(image, 3, "[3, H, W]", field);
}

absl::Status check_mask_input(const torch::Tensor& mask, absl::string_view field) {
  return check_float_input(mask, 2, "[H, W]", field);
}

torch::Tensor squeeze_leading(const torch::Tensor& tensor, int64_t rank) {
  torch::Tensor t = tensor;
  while (t.defined() && t.dim() > rank && t.size(0) == 1) t = t.squeeze(0);
  return t;
}

torch::Tensor vae_input(const torch::Tensor& image) {
  return (2.0f * image.to(torch::kFloat32) - 1.0f).unsqueeze(0).contiguous();
}

torch::Tensor latent_mask(const torch::Tensor& mask, int64_t factor) {
  using torch::indexing::Slice;
  const torch::Tensor binary = (mask.to(torch::kFloat32) >= 0.5f).to(torch::kFloat32);
  return binary.index({Slice(0, torch::indexing::None, factor), Slice(0, torch::indexing::None, factor)})
      .unsqueeze(0)
      .contiguous();
}

}  // namespace diffusiond
