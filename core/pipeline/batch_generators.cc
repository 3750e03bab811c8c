#include "core/pipeline/batch_generators.h"

namespace diffusiond {

BatchGenerators::BatchGenerators(uint64_t seed, const std::vector<uint64_t>& seeds) {
  if (seeds.empty()) {
    generators_.emplace_back(seed);
  } else {
    for (uint64_t s : seeds) generators_.emplace_back(s);
  }
}

torch::Tensor BatchGenerators::image_sample_noise(const std::vector<int64_t>& shape) {
  return generators_[0].randn(shape);
}

std::vector<torch::Tensor> BatchGenerators::batch_noise(int images, const std::vector<int64_t>& shape) {
  std::vector<int64_t> batched = shape;
  std::vector<torch::Tensor> noise;
  if (generators_.size() == 1) {
    batched.insert(batched.begin(), images);
    const torch::Tensor all = generators_[0].randn(batched);
    for (int k = 0; k < images; ++k) noise.push_back(all[k]);
  } else {
    batched.insert(batched.begin(), 1);
    for (SeededGenerator& g : generators_) noise.push_back(g.randn(batched)[0]);
  }
  return noise;
}

}  // namespace diffusiond
