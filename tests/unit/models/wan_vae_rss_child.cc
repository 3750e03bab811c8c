// Child process for wan_vae_rss_test: one streamed decode of latents [1, 16,
// frames, h, w] (frames handed on and dropped, as a video consumer takes
// them) or one encode of the clip they decode to, with the real Wan 2.1
// VAE's layout at a sixth of its widths (base_dim 16: decoder widths [64,
// 64, 64, 32, 16]) and random weights, under the daemon's allocator
// (core/memory/allocator.h). Prints "peak_rss_delta_bytes=<n>" and
// "estimate_bytes=<n>" (wan_vae_memory.h).
//
// With a fifth argument "arena", the call runs in an activation arena as
// the engine's do, and "arena_peak_live_bytes=<n>" tells its tensors' peak.
//
// Usage: wan_vae_rss_child decode|encode frames h w [arena]
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/memory/activation_arena_scope.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/wan_vae/wan_vae_memory.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/models/wan_vae/wan_vae_params.h"

int main(int argc, char** argv) {
  using namespace diffusiond;
  if (argc != 5 && argc != 6) return 2;
  const bool decode = std::strcmp(argv[1], "decode") == 0;
  const int64_t frames = std::atoll(argv[2]), h = std::atoll(argv[3]), w = std::atoll(argv[4]);
  tune_allocator_for_serving();
  torch::manual_seed(0);
  WanVaeConfig config;
  config.base_dim = config.decoder_base_dim = 16;
  config.latents_mean.assign(16, 0.0);
  config.latents_std.assign(16, 1.0);
  auto weights = std::make_unique<WeightStore>(torch::kFloat32);
  for (const ParamSpec& p : wan_vae_parameter_table(config)) {
    const int64_t fan_in = p.shape.size() > 1 ? torch::empty(p.shape)[0].numel() : 1;
    weights->add(p.name, p.kind == ParamKind::kNormWeight ? torch::ones(p.shape)
                                                            : torch::randn(p.shape) / std::sqrt(double(fan_in)));
  }
  absl::StatusOr<std::unique_ptr<WanVaeModel>> model = WanVaeModel::create(config, std::move(weights));
  if (!model.ok()) return 1;
  const int64_t f = config.spatial_factor();
  const torch::Tensor latents = torch::randn({1, config.z_dim, frames, h, w});
  const torch::Tensor clip = torch::rand({1, 3, config.frames_of(frames), h * f, w * f}) * 2 - 1;
  if (!reset_peak_rss().ok()) return 1;
  const absl::StatusOr<ProcessMemory> before = read_process_memory();
  const int64_t estimate =
      decode ? wan_vae_decode_activation_bytes(config, 1, frames, h, w, 4, std::nullopt).streamed
             : wan_vae_encode_activation_bytes(config, 1, config.frames_of(frames), h * f, w * f, 4, std::nullopt);
  bool ok = false;
  // Sized by the estimate, as the engine sizes a call's arena by its reservation.
  std::optional<ActivationArenaScope> arena;
  if (argc == 6) arena.emplace(estimate);
  if (decode) {
    int64_t decoded = 0;
    ok = (*model)->decode_frames(latents, std::nullopt, [&](const torch::Tensor& frames_out, int64_t) {
                   decoded += frames_out.size(2);
                   return absl::OkStatus();
                 }).ok() &&
         decoded == config.frames_of(frames);
  } else {
    absl::StatusOr<WanVaeEncoding> e = (*model)->encode(clip);
    ok = e.ok() && e->mean.size(2) == frames;
  }
  const absl::StatusOr<ProcessMemory> after = read_process_memory();
  if (!before.ok() || !after.ok() || !ok) return 1;
  if (arena.has_value()) {
    std::printf("arena_peak_live_bytes=%lld\n", static_cast<long long>(arena->stats().peak_live_bytes));
    std::printf("arena_high_water_bytes=%lld refusals=%lld\n", static_cast<long long>(arena->stats().high_water_bytes), static_cast<long long>(arena->stats().refusals));
  }
  std::printf("peak_rss_delta_bytes=%lld\n", static_cast<long long>(after->peak_rss_bytes - before->rss_bytes));
  std::printf("estimate_bytes=%lld\n", static_cast<long long>(estimate));
  return 0;
}
