// CudaDevice: the VramDevice of one CUDA GPU. Placed tensors are allocated
// through libtorch (its caching allocator), forwards run on the device's
// current stream, and streaming copies run on a stream of their own,
// ordered against compute with CUDA events.
//
// Built only where libtorch has CUDA (DIFFUSIOND_HAVE_CUDA); elsewhere
// open_cuda_device() says so.
#ifndef DIFFUSIOND_CORE_VRAM_CUDA_DEVICE_H_
#define DIFFUSIOND_CORE_VRAM_CUDA_DEVICE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/vram/vram_device.h"

namespace diffusiond {

// The GPU `index`. FAILED_PRECONDITION, in one line, when this build has no
// CUDA, no GPU is visible, or `index` is past the last one.
absl::StatusOr<std::unique_ptr<VramDevice>> open_cuda_device(int index);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VRAM_CUDA_DEVICE_H_
