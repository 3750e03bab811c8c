#include "core/models/vae/vae_tiling.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/cancellation_scope.h"

namespace diffusiond {
namespace {

// Blends the last `extent` slices of `a` into the first of `b` along `dim`
// (2: rows, 3: columns), in place on `b`, with upstream's weights and
// operation order: a * (1 - y / e) + b * (y / e), the weights as doubles.
void blend(const torch::Tensor& a, torch::Tensor& b, int64_t dim, int64_t extent) {
  extent = std::min({a.size(dim), b.size(dim), extent});
  for (int64_t y = 0; y < extent; ++y) {
    const double t = static_cast<double>(y) / static_cast<double>(extent);
    torch::Tensor row = b.select(dim, y);
    row.copy_(a.select(dim, a.size(dim) - extent + y) * (1.0 - t) + row * t);
  }
}

}  // namespace

absl::Status VaeTiling::validate() const {
  if (sample_tile <= 0 || latent_tile <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("VAE tiling: tile sizes must be positive, got sample ",
                                                    sample_tile, " and latent ", latent_tile));
  }
  if (!(overlap_factor >= 0 && overlap_factor < 1) ||
      static_cast<int64_t>(static_cast<double>(std::min(sample_tile, latent_tile)) * (1 - overlap_factor)) < 1) {
    return absl::InvalidArgumentError(absl::StrCat("VAE tiling: overlap_factor ", overlap_factor,
                                                   " leaves no stride for tiles of ", latent_tile,
                                                   " latents; expected 0 <= overlap < 1"));
  }
  return absl::OkStatus();
}

VaeTiling default_vae_tiling(const VaeConfig& config) {
  VaeTiling t;
  t.sample_tile = config.sample_size;
  t.latent_tile = static_cast<int64_t>(static_cast<double>(config.sample_size) /
                                       static_cast<double>(config.scale_factor()));
  return t;
}

torch::Tensor run_tiled(const torch::Tensor& input, int64_t in_tile, int64_t out_tile, double overlap,
                        const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
  // Python's int() of a positive double truncates, as the casts here do.
  const int64_t stride = static_cast<int64_t>(static_cast<double>(in_tile) * (1 - overlap));
  const int64_t extent = static_cast<int64_t>(static_cast<double>(out_tile) * overlap);
  const int64_t limit = out_tile - extent;
  const int64_t height = input.size(2), width = input.size(3);

  std::vector<torch::Tensor> strips;  // one cropped, concatenated row each
  std::vector<torch::Tensor> above;   // the previous row's blended tiles
  for (int64_t i = 0; i < height; i += stride) {
    std::vector<torch::Tensor> row, crops;
    for (int64_t j = 0; j < width; j += stride) {
      const torch::Tensor in = input.narrow(2, i, std::min(in_tile, height - i))
                                   .narrow(3, j, std::min(in_tile, width - j));
      check_cancelled();  // a cancelled decode stops within one tile
      torch::Tensor tile = fn(in);
      const size_t col = row.size();
      if (!above.empty()) blend(above[col], tile, 2, extent);
      if (col > 0) blend(row[col - 1], tile, 3, extent);
      crops.push_back(tile.narrow(2, 0, std::min(limit, tile.size(2))).narrow(3, 0, std::min(limit, tile.size(3))));
      row.push_back(std::move(tile));
    }
    strips.push_back(torch::cat(crops, 3));
    above = std::move(row);
  }
  above.clear();
  return torch::cat(strips, 2);
}

}  // namespace diffusiond
