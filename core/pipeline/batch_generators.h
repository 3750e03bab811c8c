// BatchGenerators: a Generate's torch.Generator("cpu") streams, drawn in
// upstream's order: one generator seeded with `seed` for the whole batch,
// or one per image (a list of generators). The init image's VAE sample
// is drawn first, from the first generator only, then the batch's noise:
// one [N, ...] tensor from the one generator, or one image from each.
#ifndef DIFFUSIOND_CORE_PIPELINE_BATCH_GENERATORS_H_
#define DIFFUSIOND_CORE_PIPELINE_BATCH_GENERATORS_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "core/denoise/seeded_generator.h"

namespace diffusiond {

// Not thread-safe.
class BatchGenerators {
 public:
  // One generator seeded with `seed` when `seeds` is empty, else one per seed.
  BatchGenerators(uint64_t seed, const std::vector<uint64_t>& seeds);

  // The N(0, 1) draw of latent_dist.sample() for the init image, of `shape`
  // ([1, C, h, w]): the first generator's next values.
  torch::Tensor image_sample_noise(const std::vector<int64_t>& shape);

  // Each image's initial noise of `shape` (the latents, without a batch
  // axis): `images` slices of one draw, or one draw per generator (then
  // `images` must equal their count).
  std::vector<torch::Tensor> batch_noise(int images, const std::vector<int64_t>& shape);

 private:
  std::vector<SeededGenerator> generators_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_BATCH_GENERATORS_H_
