// SeededGenerator: PyTorch's CPU generator, so the daemon draws the same
// noise as a diffusers pipeline given torch.Generator("cpu").manual_seed(s):
// each draw continues the one stream, as upstream's img2img draws the VAE's
// sample and then the initial noise from one generator.
#ifndef DIFFUSIOND_CORE_DENOISE_SEEDED_GENERATOR_H_
#define DIFFUSIOND_CORE_DENOISE_SEEDED_GENERATOR_H_

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace diffusiond {

// Not thread-safe; movable.
class SeededGenerator {
 public:
  explicit SeededGenerator(uint64_t seed);

  // torch.randn(shape, generator=g) in float32: the next values of the stream.
  torch::Tensor randn(const std::vector<int64_t>& shape);

 private:
  at::Generator generator_;
};

// torch.randn(shape) from a fresh generator seeded with `seed`: the same
// values as torch.randn(shape, generator=torch.Generator().manual_seed(seed)).
torch::Tensor seeded_noise(const std::vector<int64_t>& shape, uint64_t seed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_DENOISE_SEEDED_GENERATOR_H_
