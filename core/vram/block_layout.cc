#include "core/vram/block_layout.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace diffusiond {
namespace {

int64_t stored_bytes(const WeightStore& weights, const std::string& name) {
  if (const Fp8Weight* f8 = weights.fp8(name)) return device_bytes(f8->nbytes());
  const torch::Tensor* dense = weights.dense(name);
  return dense != nullptr ? device_bytes(static_cast<int64_t>(dense->nbytes())) : 0;
}

}  // namespace

ResidencyInput BlockLayout::residency_input(int64_t budget_bytes) const {
  ResidencyInput input;
  input.global_bytes = global_bytes;
  input.budget_bytes = budget_bytes;
  for (const WeightBlock& b : blocks) input.blocks.push_back({b.name, b.bytes});
  return input;
}

BlockLayout block_layout(const Model& model) {
  const std::vector<std::string> containers = model.block_containers();
  // (container rank, index) → block, so blocks sort in forward order.
  std::map<std::pair<size_t, int64_t>, WeightBlock> blocks;
  BlockLayout layout;
  const WeightStore& weights = model.weights();
  for (const std::string& name : weights.names()) {
    const int64_t bytes = stored_bytes(weights, name);
    bool in_block = false;
    for (size_t rank = 0; rank < containers.size() && !in_block; ++rank) {
      const std::string& c = containers[rank];
      if (name.size() <= c.size() + 1 || name.compare(0, c.size(), c) != 0 || name[c.size()] != '.') continue;
      const std::string rest = name.substr(c.size() + 1);
      const size_t dot = rest.find('.');
      int64_t index = 0;
      if (dot == std::string::npos || !absl::SimpleAtoi(rest.substr(0, dot), &index)) continue;
      WeightBlock& b = blocks[{rank, index}];
      b.name = c + "." + rest.substr(0, dot);
      b.weights.push_back(name);
      b.bytes += bytes;
      in_block = true;
    }
    if (!in_block) {
      layout.globals.push_back(name);
      layout.global_bytes += bytes;
    }
  }
  for (auto& [key, block] : blocks) layout.blocks.push_back(std::move(block));
  return layout;
}

}  // namespace diffusiond
