#include "core/models/wan_vae/wan_vae_tiling.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/cancellation_scope.h"

namespace diffusiond {
namespace {

// Blends the last `extent` slices of `a` into the first of `b` along `dim`
// (-2: rows, -1: columns), in place on `b`, as upstream's blend_v / blend_h:
// a * (1 - y / e) + b * (y / e).
void blend(const torch::Tensor& a, torch::Tensor& b, int64_t dim, int64_t extent) {
  extent = std::min({a.size(dim), b.size(dim), extent});
  for (int64_t y = 0; y < extent; ++y) {
    const double t = static_cast<double>(y) / static_cast<double>(extent);
    torch::Tensor row = b.select(dim, y);
    row.copy_(a.select(dim, a.size(dim) - extent + y) * (1.0 - t) + row * t);
  }
}

// The tiles' origins along one side: 0, stride, 2 stride, ... below `size`.
std::vector<int64_t> origins(int64_t size, int64_t stride) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < size; i += stride) out.push_back(i);
  return out;
}

// Blends a grid of tiles [rows][cols] (in place), crops each to `crop_h` x
// `crop_w`, and assembles them, cut to `height` x `width`.
torch::Tensor assemble(std::vector<std::vector<torch::Tensor>>& grid, int64_t blend_h, int64_t blend_w,
                       int64_t crop_h, int64_t crop_w, int64_t height, int64_t width) {
  std::vector<torch::Tensor> strips;
  for (size_t i = 0; i < grid.size(); ++i) {
    std::vector<torch::Tensor> crops;
    for (size_t j = 0; j < grid[i].size(); ++j) {
      torch::Tensor& tile = grid[i][j];
      if (i > 0) blend(grid[i - 1][j], tile, -2, blend_h);
      if (j > 0) blend(grid[i][j - 1], tile, -1, blend_w);
      crops.push_back(tile.narrow(-2, 0, std::min(crop_h, tile.size(-2))).narrow(-1, 0, std::min(crop_w, tile.size(-1))));
    }
    strips.push_back(torch::cat(crops, -1));
    // The row above is no longer needed once this one is blended.
    if (i > 0) grid[i - 1].clear();
  }
  const torch::Tensor whole = torch::cat(strips, -2);
  return whole.narrow(-2, 0, std::min(height, whole.size(-2))).narrow(-1, 0, std::min(width, whole.size(-1)));
}

}  // namespace

absl::Status WanVaeTiling::validate(int64_t f) const {
  for (const auto& [name, tile, stride] : {std::tuple<const char*, int64_t, int64_t>{"height", sample_height, stride_height},
                                           {"width", sample_width, stride_width}}) {
    if (stride < f || tile < stride) {
      return absl::InvalidArgumentError(absl::StrCat("VAE tiling: tile ", name, " ", tile, " every ", stride,
                                                     " pixels; expected ", f, " <= stride <= tile"));
    }
  }
  return absl::OkStatus();
}

bool WanVaeTiling::tiles_latents(int64_t h, int64_t w, int64_t f) const {
  return h > sample_height / f || w > sample_width / f;
}

bool WanVaeTiling::tiles_pixels(int64_t height, int64_t width) const {
  return height > sample_height || width > sample_width;
}

absl::Status run_tiled_decode(const torch::Tensor& z, const WanVaeTiling& t, int64_t f, const TileChunkDecoder& decode,
                              const ChunkSink& sink) {
  const int64_t frames = z.size(2), h = z.size(3), w = z.size(4);
  const int64_t tile_h = t.sample_height / f, tile_w = t.sample_width / f;
  const std::vector<int64_t> rows = origins(h, t.stride_height / f), cols = origins(w, t.stride_width / f);
  std::vector<FeatureCache> caches(rows.size() * cols.size());
  for (int64_t k = 0; k < frames; ++k) {
    std::vector<std::vector<torch::Tensor>> grid(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      for (size_t j = 0; j < cols.size(); ++j) {
        check_cancelled();  // a cancelled decode stops within one tile
        const torch::Tensor in = z.narrow(2, k, 1)
                                     .narrow(3, rows[i], std::min(tile_h, h - rows[i]))
                                     .narrow(4, cols[j], std::min(tile_w, w - cols[j]));
        FeatureCache& cache = caches[i * cols.size() + j];
        cache.begin_chunk(k + 1 == frames);
        grid[i].push_back(decode(in, &cache));
      }
    }
    torch::Tensor chunk = assemble(grid, t.sample_height - t.stride_height, t.sample_width - t.stride_width,
                                   t.stride_height, t.stride_width, h * f, w * f);
    grid.clear();
    if (absl::Status s = sink(std::move(chunk)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

torch::Tensor run_tiled_encode(const torch::Tensor& x, const WanVaeTiling& t, int64_t f,
                               const std::function<torch::Tensor(const torch::Tensor& tile)>& encode) {
  const int64_t height = x.size(3), width = x.size(4);
  const std::vector<int64_t> rows = origins(height, t.stride_height), cols = origins(width, t.stride_width);
  std::vector<std::vector<torch::Tensor>> grid(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < cols.size(); ++j) {
      check_cancelled();
      grid[i].push_back(encode(x.narrow(3, rows[i], std::min(t.sample_height, height - rows[i]))
                                   .narrow(4, cols[j], std::min(t.sample_width, width - cols[j]))));
    }
  }
  const int64_t tile_h = t.sample_height / f, tile_w = t.sample_width / f;
  const int64_t stride_h = t.stride_height / f, stride_w = t.stride_width / f;
  return assemble(grid, tile_h - stride_h, tile_w - stride_w, stride_h, stride_w, height / f, width / f);
}

}  // namespace diffusiond
