// VramDevice: the seam between the GPU tier's logic (placement, residency
// plan, streaming order, accounting) and the memory it manages. Two
// implementations: CUDA (cuda_device.h) and a simulated device that lives in
// host memory with its own capacity, allocations and copy thread
// (sim_device.h), so the whole tier runs and is tested on CPU-only machines.
//
// The model of a device is CUDA's: a compute queue (where forwards run), a
// copy queue beside it, and fences that order one against the other.
//
// Not here: what is placed or evicted (vram_tier.h), or the plan
// (residency_plan.h).
#ifndef DIFFUSIOND_CORE_VRAM_VRAM_DEVICE_H_
#define DIFFUSIOND_CORE_VRAM_VRAM_DEVICE_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diffusiond {

// A point in one of the device's queues. Opaque; made by the device that
// waits on it.
class Fence {
 public:
  virtual ~Fence() = default;
};

// Host memory made reachable by the device's copy engine for as long as the
// object lives (CUDA: page-locked with cudaHostRegister).
class HostPin {
 public:
  virtual ~HostPin() = default;
  virtual int64_t bytes() const = 0;
};

// Thread-safe.
class VramDevice {
 public:
  virtual ~VramDevice() = default;

  // "cuda:0", or "sim" for the simulated device.
  virtual std::string name() const = 0;
  // Where placed tensors live and forwards run.
  virtual torch::Device torch_device() const = 0;
  // Bytes the device could give this process now (CUDA: cudaMemGetInfo's
  // free memory; sim: capacity minus what is allocated).
  virtual int64_t free_bytes() const = 0;
  // Bytes this process holds on the device through allocate(), live.
  virtual int64_t allocated_bytes() const = 0;

  // Uninitialised device memory for one tensor. RESOURCE_EXHAUSTED when the
  // device refuses (out of memory).
  virtual absl::StatusOr<torch::Tensor> allocate(const std::vector<int64_t>& shape,
                                                 torch::ScalarType dtype) = 0;
  // Pins `host`'s storage for copies. Nothing when the storage cannot be
  // pinned (too small or not page-aligned): copies from it then stage
  // through pageable memory, slower but the same bytes.
  virtual std::unique_ptr<HostPin> pin_host(const torch::Tensor& host) = 0;

  // Enqueues host → device on the copy queue. REQUIRES: both contiguous,
  // same number of bytes; `host` stays alive until a copy fence recorded
  // after it has passed.
  virtual void copy_async(const torch::Tensor& host, const torch::Tensor& device) = 0;
  // The copy queue up to now.
  virtual std::shared_ptr<Fence> copy_fence() = 0;
  // Makes the compute queue wait for a copy fence.
  virtual void compute_wait(const Fence& copy_fence) = 0;
  // The compute queue up to now.
  virtual std::shared_ptr<Fence> compute_fence() = 0;
  // Makes the copy queue wait for a compute fence (a buffer is free again).
  virtual void copy_wait(const Fence& compute_fence) = 0;
  // Blocks until both queues are idle.
  virtual void synchronize() = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VRAM_VRAM_DEVICE_H_
