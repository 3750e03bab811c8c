// What --device opens: nothing for cpu, the simulated device with its
// budget (explicit or auto), one-line refusals, and the default dtype.
#include "server/daemon_device.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/torch_compat.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

DaemonOptions on(const std::string& device) {
  DaemonOptions o;
  o.device = device;
  return o;
}

TEST(DaemonDevice, CpuOpensNothing) {
  absl::StatusOr<DaemonDevice> d = open_daemon_device(on("cpu"));
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ(d->device, nullptr);
  EXPECT_EQ(d->vram_budget, nullptr);
}

TEST(DaemonDevice, SimAutoBudgetIsItsCapacityLessTheHeadroom) {
  DaemonOptions o = on("sim");
  o.sim_device_memory_bytes = 64 << 20;
  o.vram_headroom_bytes = 16 << 20;
  absl::StatusOr<DaemonDevice> d = open_daemon_device(o);
  ASSERT_THAT(d, IsOk());
  ASSERT_NE(d->device, nullptr);
  EXPECT_EQ(d->device->name(), "sim");
  EXPECT_EQ(d->vram_budget->device(), Device::kCuda);
  EXPECT_EQ(d->vram_budget->capacity_bytes(), 48 << 20);
  EXPECT_EQ(d->auto_budget_bytes, 48 << 20);
}

TEST(DaemonDevice, AnExplicitBudgetWinsEvenAboveAuto) {
  DaemonOptions o = on("sim");
  o.sim_device_memory_bytes = 64 << 20;
  o.vram_budget_bytes = 100 << 20;  // the daemon warns; the budget is what was asked
  absl::StatusOr<DaemonDevice> d = open_daemon_device(o);
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ(d->vram_budget->capacity_bytes(), 100 << 20);
  EXPECT_LT(d->auto_budget_bytes, 0);
}

TEST(DaemonDevice, AutoThatLeavesNothingFailsInOneLine) {
  DaemonOptions o = on("sim");
  o.sim_device_memory_bytes = 1 << 30;  // the default headroom is 2 GiB
  absl::StatusOr<DaemonDevice> d = open_daemon_device(o);
  EXPECT_THAT(d, StatusIs(absl::StatusCode::kFailedPrecondition,
                          HasSubstr("--device sim: --vram_budget auto leaves nothing: 1.00 GiB")));
  EXPECT_THAT(std::string(d.status().message()), Not(HasSubstr("\n")));
}

TEST(DaemonDevice, CudaWithoutCudaOrAGpuFailsNamingTheDevice) {
  absl::StatusOr<DaemonDevice> d = open_daemon_device(on("cuda:0"));
  if (d.ok()) GTEST_SKIP() << "a CUDA GPU is visible";
  EXPECT_THAT(d, StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--device cuda:0: ")));
  if (!compat::kHaveCuda) { EXPECT_THAT(d, StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no CUDA"))); }
  EXPECT_THAT(std::string(d.status().message()), Not(HasSubstr("\n")));
}

// The default is the fast path: auto, but float32 on the simulated device
// so that it computes what the CPU does on every CPU alike. The CPU's
// features are faked, so this holds on any machine.
TEST(DaemonDevice, ComputeDtypeDefaultsToTheFastPath) {
  CpuFeatures avx2;
  avx2.avx2 = avx2.fma = true;
  CpuFeatures amx;
  amx.amx_bf16 = true;
  for (const CpuFeatures& cpu : {avx2, amx}) {
    EXPECT_EQ(resolve_compute_dtype(on("cuda:1"), cpu).dtype, ComputeDtype::kBFloat16);
    EXPECT_EQ(resolve_compute_dtype(on("sim"), cpu).dtype, ComputeDtype::kFloat32);
  }
  EXPECT_EQ(resolve_compute_dtype(on("cpu"), avx2).dtype, ComputeDtype::kFloat32);
  EXPECT_EQ(resolve_compute_dtype(on("cpu"), avx2).chosen_by, "default (auto): no native bf16 matmuls on this CPU");
  EXPECT_EQ(resolve_compute_dtype(on("cpu"), amx).dtype, ComputeDtype::kBFloat16);
  EXPECT_EQ(resolve_compute_dtype(on("cpu"), amx).chosen_by, "default (auto): the CPU has AMX-BF16");
}

// auto: bfloat16 where matmuls in bf16 are native (the CPU's features are
// faked, so this holds on any machine), float32 elsewhere.
TEST(DaemonDevice, AutoComputeDtypeFollowsTheCpu) {
  auto with = [](const char* device, const char* dtype) {
    DaemonOptions o = on(device);
    o.compute_dtype = dtype;
    return o;
  };
  CpuFeatures avx2;
  avx2.avx2 = avx2.fma = true;
  CpuFeatures bf16 = avx2;
  bf16.avx512f = bf16.avx512bw = bf16.avx512vl = bf16.avx512dq = bf16.avx512bf16 = true;
  CpuFeatures amx;
  amx.amx_bf16 = true;
  EXPECT_EQ(resolve_compute_dtype(with("cpu", "auto"), avx2).dtype, ComputeDtype::kFloat32);
  EXPECT_EQ(resolve_compute_dtype(with("cpu", "auto"), bf16).dtype, ComputeDtype::kBFloat16);
  EXPECT_EQ(resolve_compute_dtype(with("cpu", "auto"), amx).dtype, ComputeDtype::kBFloat16);
  EXPECT_EQ(resolve_compute_dtype(with("cuda:0", "auto"), avx2).dtype, ComputeDtype::kBFloat16);
  EXPECT_EQ(resolve_compute_dtype(with("cpu", "float16"), amx).dtype, ComputeDtype::kFloat16);
  EXPECT_EQ(resolve_compute_dtype(with("cuda:0", "float32"), amx).dtype, ComputeDtype::kFloat32);
}

}  // namespace
}  // namespace diffusiond
