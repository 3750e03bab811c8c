// The memory devices a budget can account for.
//
// Not here: device placement policy (core/cache) or CUDA calls.
#ifndef DIFFUSIOND_CORE_MEMORY_DEVICE_H_
#define DIFFUSIOND_CORE_MEMORY_DEVICE_H_

#include <array>

#include "absl/strings/string_view.h"

namespace diffusiond {

enum class Device : int {
  kCpu = 0,   // host RAM
  kCuda = 1,  // GPU memory (VRAM)
};

inline constexpr int kNumDevices = 2;

// Indices of per-device arrays: bytes[kCpuIndex].
inline constexpr int kCpuIndex = static_cast<int>(Device::kCpu);
inline constexpr int kCudaIndex = static_cast<int>(Device::kCuda);

// Returns the lower-case name used in logs, errors and metric labels:
// "cpu" or "cuda".
absl::string_view device_name(Device device);

// Returns every device, in enum order.
inline constexpr std::array<Device, kNumDevices> all_devices() {
  return {Device::kCpu, Device::kCuda};
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_DEVICE_H_
