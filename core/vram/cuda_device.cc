#include "core/vram/cuda_device.h"

#include "absl/strings/str_cat.h"
#include "kernels/torch_compat.h"

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <atomic>

#include "core/util/bytes.h"
#endif

namespace diffusiond {

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
namespace {

class CudaFence final : public Fence {
 public:
  CudaFence() { cudaEventCreateWithFlags(&event, cudaEventDisableTiming); }
  ~CudaFence() override { cudaEventDestroy(event); }
  cudaEvent_t event = nullptr;
};

// cudaHostRegister pins whole pages; storages that do not start on one
// (small tensors from the general allocator) are copied pageable.
constexpr int64_t kMinPinnedBytes = 1 << 20;

class CudaPin final : public HostPin {
 public:
  CudaPin(void* p, int64_t bytes) : p_(p), bytes_(bytes) {}
  ~CudaPin() override { cudaHostUnregister(p_); }
  int64_t bytes() const override { return bytes_; }

 private:
  void* const p_;
  const int64_t bytes_;
};

class CudaDevice final : public VramDevice {
 public:
  explicit CudaDevice(int index)
      : index_(index),
        copy_stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, static_cast<c10::DeviceIndex>(index))),
        allocated_(std::make_shared<std::atomic<int64_t>>(0)) {}

  std::string name() const override { return absl::StrCat("cuda:", index_); }
  torch::Device torch_device() const override {
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index_));
  }
  int64_t free_bytes() const override {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index_));
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    return static_cast<int64_t>(free);
  }
  int64_t allocated_bytes() const override { return allocated_->load(); }

  absl::StatusOr<torch::Tensor> allocate(const std::vector<int64_t>& shape, torch::ScalarType dtype) override {
    int64_t bytes = static_cast<int64_t>(c10::elementSize(dtype));
    for (int64_t d : shape) bytes *= d;
    try {
      torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(dtype).device(torch_device()));
      // Count the bytes until the storage goes: a second tensor over the
      // same storage would not, so the count lives in the deleter's place.
      allocated_->fetch_add(bytes);
      std::shared_ptr<std::atomic<int64_t>> allocated = allocated_;
      return torch::from_blob(
          t.data_ptr(), shape, [t, allocated, bytes](void*) mutable { allocated->fetch_sub(bytes); },
          t.options());
    } catch (const c10::Error& e) {
      return absl::ResourceExhaustedError(
          absl::StrCat(name(), " refused ", format_bytes(bytes), ": ", e.what_without_backtrace()));
    }
  }

  std::unique_ptr<HostPin> pin_host(const torch::Tensor& host) override {
    // const in libtorch 2.x; registering does not write.
    void* p = const_cast<void*>(static_cast<const void*>(host.storage().data()));
    const int64_t bytes = static_cast<int64_t>(host.storage().nbytes());
    if (bytes < kMinPinnedBytes || reinterpret_cast<uintptr_t>(p) % 4096 != 0) return nullptr;
    if (cudaHostRegister(p, static_cast<size_t>(bytes), cudaHostRegisterDefault) != cudaSuccess) {
      cudaGetLastError();  // clears the error: the copy goes pageable instead
      return nullptr;
    }
    return std::make_unique<CudaPin>(p, bytes);
  }

  void copy_async(const torch::Tensor& host, const torch::Tensor& device) override {
    cudaMemcpyAsync(device.data_ptr(), host.data_ptr(), host.nbytes(), cudaMemcpyHostToDevice, copy_stream_.stream());
  }
  std::shared_ptr<Fence> copy_fence() override { return record(copy_stream_.stream()); }
  void compute_wait(const Fence& fence) override {
    cudaStreamWaitEvent(compute_stream(), static_cast<const CudaFence&>(fence).event, 0);
  }
  std::shared_ptr<Fence> compute_fence() override { return record(compute_stream()); }
  void copy_wait(const Fence& fence) override {
    cudaStreamWaitEvent(copy_stream_.stream(), static_cast<const CudaFence&>(fence).event, 0);
  }
  void synchronize() override {
    cudaStreamSynchronize(copy_stream_.stream());
    cudaStreamSynchronize(compute_stream());
  }

 private:
  cudaStream_t compute_stream() const {
    return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(index_)).stream();
  }
  std::shared_ptr<Fence> record(cudaStream_t stream) {
    auto fence = std::make_shared<CudaFence>();
    cudaEventRecord(fence->event, stream);
    return fence;
  }

  const int index_;
  c10::cuda::CUDAStream copy_stream_;
  const std::shared_ptr<std::atomic<int64_t>> allocated_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<VramDevice>> open_cuda_device(int index) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat("--device cuda:", index, ": no CUDA GPU is visible"));
  }
  if (index < 0 || index >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device cuda:", index, ": only ", count, " CUDA GPU", count == 1 ? " is" : "s are", " visible"));
  }
  return std::unique_ptr<VramDevice>(new CudaDevice(index));
}

#else

absl::StatusOr<std::unique_ptr<VramDevice>> open_cuda_device(int index) {
  return absl::FailedPreconditionError(absl::StrCat(
      "--device cuda:", index, ": this build has no CUDA (libtorch ", TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR,
      " without CUDA); build against a CUDA libtorch (docs/gpu.md)"));
}

#endif

}  // namespace diffusiond
