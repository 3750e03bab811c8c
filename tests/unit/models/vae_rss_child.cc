// Child process for vae_rss_test: one decode of a [1, 16, side, side]
// latent (default 256: a 2048x2048 image) with the tiny VAE config
// (block_out_channels [16, 24, 48, 48], 1 layer per block, 8 groups, as the
// vae-tiny fixture) and random weights, tiled with upstream's default tiles
// (sample_size 1024: 128-latent tiles) or untiled, under the daemon's
// allocator (core/memory/allocator.h). Prints
// "peak_rss_delta_bytes=<n>" and "formula_bytes=<n>" (vae_memory.h).
//
// Usage: vae_rss_child [tiled|untiled] [side]
#include <torch/utils.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/vae/vae_memory.h"
#include "core/models/vae/vae_model.h"
#include "core/models/vae/vae_params.h"

int main(int argc, char** argv) {
  using namespace diffusiond;
  const bool tiled = argc < 2 || std::strcmp(argv[1], "untiled") != 0;
  const int64_t side = argc > 2 ? std::atoll(argv[2]) : 256;
  tune_allocator_for_serving();
  torch::manual_seed(0);
  VaeConfig config;
  config.block_out_channels = {16, 24, 48, 48};
  config.layers_per_block = 1;
  config.norm_num_groups = 8;
  auto weights = std::make_unique<WeightStore>(torch::kFloat32);
  for (const ParamSpec& p : vae_parameter_table(config)) {
    weights->add(p.name, torch::randn(p.shape) * 0.1);
  }
  absl::StatusOr<std::unique_ptr<VaeModel>> model = VaeModel::create(config, std::move(weights));
  if (!model.ok()) return 1;
  const torch::Tensor latents = torch::randn({1, config.latent_channels, side, side});
  const std::optional<VaeTiling> tiling =
      tiled ? std::optional<VaeTiling>(default_vae_tiling(config)) : std::nullopt;
  if (!reset_peak_rss().ok()) return 1;
  const absl::StatusOr<ProcessMemory> before = read_process_memory();
  absl::StatusOr<torch::Tensor> image = (*model)->decode(latents, tiling);
  const absl::StatusOr<ProcessMemory> after = read_process_memory();
  if (!before.ok() || !after.ok() || !image.ok() || image->size(2) != side * 8) return 1;
  std::printf("peak_rss_delta_bytes=%lld\n", static_cast<long long>(after->peak_rss_bytes - before->rss_bytes));
  std::printf("formula_bytes=%lld\n",
              static_cast<long long>(vae_decode_activation_bytes(config, 1, side, side, 4, tiling)));
  return 0;
}
