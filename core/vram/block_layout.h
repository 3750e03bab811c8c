// How a model's weights divide into blocks for the residency plan: a block
// is every weight named "<container>.<index>.…" for a container the model
// lists in forward order (Model::block_containers()); the rest are global.
#ifndef DIFFUSIOND_CORE_VRAM_BLOCK_LAYOUT_H_
#define DIFFUSIOND_CORE_VRAM_BLOCK_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/models/model.h"
#include "core/vram/residency_plan.h"

namespace diffusiond {

// Device allocations are rounded to this, as CUDA's caching allocator
// rounds small blocks; slots lay weights out at this alignment too.
inline constexpr int64_t kDeviceAlignment = 512;
inline int64_t device_bytes(int64_t nbytes) {
  return (nbytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

struct WeightBlock {
  std::string name;                // "layers.3"
  std::vector<std::string> weights;  // its parameter names
  int64_t bytes = 0;               // sum of device_bytes() of the stored weights
};

struct BlockLayout {
  std::vector<std::string> globals;
  int64_t global_bytes = 0;
  std::vector<WeightBlock> blocks;  // forward order

  // The plan's input for `budget_bytes`.
  ResidencyInput residency_input(int64_t budget_bytes) const;
};

BlockLayout block_layout(const Model& model);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VRAM_BLOCK_LAYOUT_H_
