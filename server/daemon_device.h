// DaemonDevice: the device --device names, opened for the daemon — the
// VramDevice its denoisers run on (the simulated one, or a CUDA GPU) and
// the VRAM budget their placements are admitted under — and the compute
// dtype that goes with it. For --device cpu there is neither.
//
// Not here: placement and eviction (core/vram, through the Engine).
#ifndef DIFFUSIOND_SERVER_DAEMON_DEVICE_H_
#define DIFFUSIOND_SERVER_DAEMON_DEVICE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/cpu/cpu_features.h"
#include "core/memory/budget.h"
#include <string>

#include "core/precision/compute_dtype.h"
#include "core/vram/vram_device.h"
#include "server/daemon_options.h"

namespace diffusiond {

struct DaemonDevice {
  std::unique_ptr<VramDevice> device;   // null for --device cpu
  std::unique_ptr<Budget> vram_budget;  // Device::kCuda; with `device` only
  // What --vram_budget auto gives on this device now (free bytes minus
  // --vram_headroom), so an explicit budget above it can be warned about.
  int64_t auto_budget_bytes = 0;
};

// Opens --device and sizes its budget: --vram_budget, or auto = the device's
// free bytes now minus --vram_headroom. FAILED_PRECONDITION, one line
// naming --device, when the device cannot be opened (a build without CUDA,
// no GPU visible, an index past the last) or when auto leaves nothing. The
// caller owns the result; the budget must outlive every placement.
absl::StatusOr<DaemonDevice> open_daemon_device(const DaemonOptions& options);

// The compute dtype every forward runs in, and why it was chosen.
struct ComputeDtypeChoice {
  ComputeDtype dtype = ComputeDtype::kFloat32;
  std::string chosen_by;  // one phrase for the ready line, e.g. "auto: the CPU has AVX512-BF16"
};

// The compute dtype of --compute_dtype as given, with `cpu` the CPU's
// features (detect_cpu_features() in production):
// - empty (the default) or "auto": the fast path — bfloat16 on cuda:N and
//   on CPUs with native bf16 matmuls (AVX512-BF16 or AMX, where oneDNN runs
//   them), float32 elsewhere; the default keeps float32 on sim, so that
//   the simulated device computes exactly what the CPU does, on every CPU
//   alike;
// - a dtype's name: that dtype (parity checks pin float32 this way).
ComputeDtypeChoice resolve_compute_dtype(const DaemonOptions& options, const CpuFeatures& cpu);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_DAEMON_DEVICE_H_
