#include "core/vram/sim_device.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/bytes.h"

namespace diffusiond {
namespace {

class SimFence final : public Fence {
 public:
  explicit SimFence(int64_t sequence) : sequence(sequence) {}
  const int64_t sequence;  // copies enqueued before it
};

// The simulated device copies whole pages as the CUDA one registers them;
// smaller storages are not pinned there either.
constexpr int64_t kMinPinnedBytes = 1 << 20;

class SimPin final : public HostPin {
 public:
  explicit SimPin(int64_t bytes) : bytes_(bytes) {}
  int64_t bytes() const override { return bytes_; }

 private:
  const int64_t bytes_;
};

}  // namespace

struct SimDevice::Allocations {
  explicit Allocations(int64_t capacity) : capacity(capacity) {}
  const int64_t capacity;
  mutable Mutex mu;
  int64_t bytes ABSL_GUARDED_BY(mu) = 0;
};

SimDevice::SimDevice(const SimDeviceOptions& options)
    : options_(options), allocations_(std::make_shared<Allocations>(options.capacity_bytes)) {
  copier_ = std::thread([this] { run_copies(); });
}

SimDevice::~SimDevice() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.signal_all();
  }
  copier_.join();
}

int64_t SimDevice::free_bytes() const {
  MutexLock lock(&allocations_->mu);
  return allocations_->capacity - allocations_->bytes;
}

int64_t SimDevice::allocated_bytes() const {
  MutexLock lock(&allocations_->mu);
  return allocations_->bytes;
}

absl::StatusOr<torch::Tensor> SimDevice::allocate(const std::vector<int64_t>& shape,
                                                  torch::ScalarType dtype) {
  int64_t bytes = static_cast<int64_t>(c10::elementSize(dtype));
  for (int64_t d : shape) bytes *= d;
  {
    MutexLock lock(&allocations_->mu);
    if (allocations_->bytes + bytes > allocations_->capacity) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "sim device out of memory: asked ", format_bytes(bytes), " with ",
          format_bytes(allocations_->bytes), " of ", format_bytes(allocations_->capacity), " allocated"));
    }
    allocations_->bytes += bytes;
  }
  // Aligned as libtorch's CPU allocator aligns: vectorised loops peel
  // differently at other alignments, and a placed forward must give the
  // CPU's bits.
  constexpr size_t kAlignment = 64;
  const size_t rounded = (static_cast<size_t>(std::max<int64_t>(bytes, 1)) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) {
    MutexLock lock(&allocations_->mu);
    allocations_->bytes -= bytes;
    return absl::ResourceExhaustedError(absl::StrCat("sim device: malloc of ", format_bytes(bytes), " failed"));
  }
  std::shared_ptr<Allocations> allocations = allocations_;
  return torch::from_blob(
      p, shape,
      [allocations, bytes](void* q) {
        std::free(q);
        MutexLock lock(&allocations->mu);
        allocations->bytes -= bytes;
      },
      torch::TensorOptions().dtype(dtype));
}

std::unique_ptr<HostPin> SimDevice::pin_host(const torch::Tensor& host) {
  const int64_t bytes = static_cast<int64_t>(host.storage().nbytes());
  if (bytes < kMinPinnedBytes) return nullptr;
  return std::make_unique<SimPin>(bytes);
}

void SimDevice::copy_async(const torch::Tensor& host, const torch::Tensor& device) {
  const int64_t bytes = static_cast<int64_t>(host.nbytes());
  assert(host.is_contiguous() && device.is_contiguous() && bytes == static_cast<int64_t>(device.nbytes()));
  MutexLock lock(&mu_);
  queue_.push_back([host, device, bytes, rate = options_.copy_bytes_per_second] {
    std::memcpy(device.data_ptr(), host.data_ptr(), static_cast<size_t>(bytes));
    if (rate > 0) std::this_thread::sleep_for(std::chrono::duration<double>(bytes / rate));
  });
  ++enqueued_;
  bytes_copied_ += bytes;
  changed_.signal_all();
}

std::shared_ptr<Fence> SimDevice::copy_fence() {
  MutexLock lock(&mu_);
  return std::make_shared<SimFence>(enqueued_);
}

void SimDevice::compute_wait(const Fence& copy_fence) {
  const int64_t sequence = static_cast<const SimFence&>(copy_fence).sequence;
  MutexLock lock(&mu_);
  while (done_ < sequence) changed_.wait(&mu_);
}

std::shared_ptr<Fence> SimDevice::compute_fence() { return std::make_shared<SimFence>(0); }

void SimDevice::synchronize() {
  MutexLock lock(&mu_);
  while (done_ < enqueued_) changed_.wait(&mu_);
}

int64_t SimDevice::copies_done() const {
  MutexLock lock(&mu_);
  return done_;
}

int64_t SimDevice::bytes_copied() const {
  MutexLock lock(&mu_);
  return bytes_copied_;
}

void SimDevice::run_copies() {
  for (;;) {
    std::function<void()> copy;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) changed_.wait(&mu_);
      if (queue_.empty()) return;  // stopping, and every copy ran
      copy = std::move(queue_.front());
      queue_.pop_front();
    }
    copy();
    copy = nullptr;  // drops the tensors before the fence passes
    MutexLock lock(&mu_);
    ++done_;
    changed_.signal_all();
  }
}

}  // namespace diffusiond
