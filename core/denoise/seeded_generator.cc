#include "core/denoise/seeded_generator.h"

#include <ATen/CPUGeneratorImpl.h>

namespace diffusiond {

SeededGenerator::SeededGenerator(uint64_t seed) : generator_(at::detail::createCPUGenerator(seed)) {}

torch::Tensor SeededGenerator::randn(const std::vector<int64_t>& shape) {
  return torch::randn(shape, generator_, torch::TensorOptions().dtype(torch::kFloat32));
}

torch::Tensor seeded_noise(const std::vector<int64_t>& shape, uint64_t seed) {
  return SeededGenerator(seed).randn(shape);
}

}  // namespace diffusiond
