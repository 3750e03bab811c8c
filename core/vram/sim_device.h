// SimDevice: a VramDevice in host memory, for tests and CPU-only machines
// (`--device sim`). It has a capacity of its own, refuses allocations past
// it as a GPU would, and runs copies on a thread of their own in order, so
// placement, eviction, streaming and their accounting run exactly as on a
// GPU. Forwards on it run on the CPU: its tensors are CPU tensors.
#ifndef DIFFUSIOND_CORE_VRAM_SIM_DEVICE_H_
#define DIFFUSIOND_CORE_VRAM_SIM_DEVICE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "core/util/mutex.h"
#include "core/vram/vram_device.h"

namespace diffusiond {

struct SimDeviceOptions {
  int64_t capacity_bytes = 0;
  // Copies sleep to move at most this many bytes per second; 0: no limit.
  // Tests slow the copy thread down so that prefetching is exercised.
  double copy_bytes_per_second = 0;
};

class SimDevice final : public VramDevice {
 public:
  explicit SimDevice(const SimDeviceOptions& options);
  ~SimDevice() override;

  std::string name() const override { return "sim"; }
  torch::Device torch_device() const override { return torch::kCPU; }
  int64_t free_bytes() const override;
  int64_t allocated_bytes() const override;

  absl::StatusOr<torch::Tensor> allocate(const std::vector<int64_t>& shape,
                                         torch::ScalarType dtype) override;
  std::unique_ptr<HostPin> pin_host(const torch::Tensor& host) override;
  void copy_async(const torch::Tensor& host, const torch::Tensor& device) override;
  std::shared_ptr<Fence> copy_fence() override;
  void compute_wait(const Fence& copy_fence) override;
  // Compute on the CPU is synchronous: its fences have always passed.
  std::shared_ptr<Fence> compute_fence() override;
  void copy_wait(const Fence& compute_fence) override {}
  void synchronize() override;

  // Copies run so far, and their bytes (for tests of the streaming order).
  int64_t copies_done() const;
  int64_t bytes_copied() const;

 private:
  struct Allocations;  // shared with the tensors' deleters
  void run_copies();

  const SimDeviceOptions options_;
  const std::shared_ptr<Allocations> allocations_;
  mutable Mutex mu_;
  CondVar changed_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_copied_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread copier_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VRAM_SIM_DEVICE_H_
