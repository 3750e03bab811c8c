#include "server/daemon_device.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/util/bytes.h"
#include "core/vram/cuda_device.h"
#include "core/vram/sim_device.h"

namespace diffusiond {

absl::StatusOr<DaemonDevice> open_daemon_device(const DaemonOptions& options) {
  DaemonDevice out;
  if (options.device == "cpu") return out;
  if (options.device == "sim") {
    SimDeviceOptions sim;
    sim.capacity_bytes = options.sim_device_memory_bytes;
    out.device = std::make_unique<SimDevice>(sim);
  } else {
    const std::optional<int> index = cuda_device_index(options);
    // daemon_options accepts only cpu, sim and cuda:N.
    if (!index.has_value()) return absl::InternalError(absl::StrCat("--device ", options.device, ": unknown"));
    absl::StatusOr<std::unique_ptr<VramDevice>> cuda = open_cuda_device(*index);
    if (!cuda.ok()) return cuda.status();  // its message names --device cuda:N
    out.device = *std::move(cuda);
  }
  const int64_t free_bytes = out.device->free_bytes();
  out.auto_budget_bytes = free_bytes - options.vram_headroom_bytes;
  int64_t budget = out.auto_budget_bytes;
  if (options.vram_budget_bytes.has_value()) {
    budget = *options.vram_budget_bytes;
  } else if (budget <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device ", out.device->name(), ": --vram_budget auto leaves nothing: ", format_bytes(free_bytes),
        " free minus --vram_headroom ", format_bytes(options.vram_headroom_bytes),
        "; free device memory or lower --vram_headroom"));
  }
  out.vram_budget = std::make_unique<Budget>(Device::kCuda, budget);
  return out;
}

ComputeDtypeChoice resolve_compute_dtype(const DaemonOptions& options, const CpuFeatures& cpu) {
  const bool cuda = cuda_device_index(options).has_value();
  const bool by_default = options.compute_dtype.empty();
  if (!by_default && options.compute_dtype != "auto") {
    // daemon_options checked the spelling against the same table.
    return {parse_compute_dtype_name(options.compute_dtype).value_or(ComputeDtype::kFloat32), "--compute_dtype"};
  }
  const std::string how = by_default ? "default (auto)" : "auto";
  if (cuda) return {ComputeDtype::kBFloat16, absl::StrCat(how, ": a CUDA device")};
  if (by_default && options.device == "sim") {
    return {ComputeDtype::kFloat32, "default on the simulated device: the CPU's float32 results"};
  }
  if (cpu.amx_bf16) return {ComputeDtype::kBFloat16, absl::StrCat(how, ": the CPU has AMX-BF16")};
  if (cpu.avx512bf16) return {ComputeDtype::kBFloat16, absl::StrCat(how, ": the CPU has AVX512-BF16")};
  return {ComputeDtype::kFloat32, absl::StrCat(how, ": no native bf16 matmuls on this CPU")};
}

}  // namespace diffusiond
