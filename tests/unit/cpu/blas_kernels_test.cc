// Choosing the BLAS kernels: OpenBLAS's generic fallback on a CPU that runs
// better kernels is corrected by a re-exec with OPENBLAS_CORETYPE, a choice
// the user made is kept, and a BLAS other than OpenBLAS is left alone. The
// CPU and OpenBLAS's answers are faked through BlasProbe, so nothing here
// depends on the machine's CPU; the re-exec itself runs in a child.
#include "core/cpu/blas_kernels.h"

#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace diffusiond {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Optional;

CpuFeatures avx512_bf16() {
  CpuFeatures f;
  f.avx2 = f.fma = f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512bf16 = true;
  return f;
}

CpuFeatures avx2_only() {
  CpuFeatures f;
  f.avx2 = f.fma = true;
  return f;
}

BlasProbe openblas(const std::string& corename, const CpuFeatures& cpu) {
  BlasProbe p;
  p.corename = corename;
  p.config = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP " + corename + " MAX_THREADS=64";
  p.cpu = cpu;
  return p;
}

TEST(BlasKernels, BestCoreFollowsTheFeatures) {
  EXPECT_THAT(best_openblas_coretype(avx512_bf16()), Optional(std::string("Cooperlake")));
  CpuFeatures skylake = avx512_bf16();
  skylake.avx512bf16 = false;
  EXPECT_THAT(best_openblas_coretype(skylake), Optional(std::string("SkylakeX")));
  CpuFeatures partial = skylake;
  partial.avx512vl = false;  // AVX-512F without VL: SkylakeX kernels would fault
  EXPECT_THAT(best_openblas_coretype(partial), Optional(std::string("Haswell")));
  EXPECT_THAT(best_openblas_coretype(avx2_only()), Optional(std::string("Haswell")));
  EXPECT_EQ(best_openblas_coretype(CpuFeatures{}), std::nullopt);
}

// The case the daemon exists to fix: OpenBLAS 0.3.21 on a newer Xeon.
TEST(BlasKernels, AGenericFallbackOnAnAvx512CpuIsCorrected) {
  const BlasChoice c = choose_blas_kernels(openblas("Prescott", avx512_bf16()));
  EXPECT_TRUE(c.fallback);
  EXPECT_THAT(c.reexec_with, Optional(std::string("Cooperlake")));
  EXPECT_EQ(c.chosen_by, "openblas");
  EXPECT_THAT(c.summary, HasSubstr("Prescott kernels: a generic fallback"));
  EXPECT_THAT(c.summary, HasSubstr("OPENBLAS_CORETYPE=Cooperlake"));
  // AVX-512 CPUs that OpenBLAS placed at AVX2 (e.g. a Zen 4 it calls Zen).
  EXPECT_THAT(choose_blas_kernels(openblas("Zen", avx512_bf16())).reexec_with, Optional(std::string("Cooperlake")));
  EXPECT_THAT(choose_blas_kernels(openblas("Sandybridge", avx2_only())).reexec_with, Optional(std::string("Haswell")));
}

TEST(BlasKernels, KernelsAtTheCpusLevelAreKept) {
  for (const char* core : {"Haswell", "Zen", "Excavator"}) {
    const BlasChoice c = choose_blas_kernels(openblas(core, avx2_only()));
    EXPECT_FALSE(c.fallback) << core;
    EXPECT_EQ(c.reexec_with, std::nullopt) << core;
    EXPECT_THAT(c.summary, HasSubstr("(detected by OpenBLAS)"));
  }
  EXPECT_EQ(choose_blas_kernels(openblas("SkylakeX", avx512_bf16())).reexec_with, std::nullopt);
  EXPECT_EQ(choose_blas_kernels(openblas("Prescott", CpuFeatures{})).reexec_with, std::nullopt);
}

// OPENBLAS_CORETYPE set by the user: kept, with a word when it is slower
// than the CPU allows.
TEST(BlasKernels, TheUsersCoretypeIsKept) {
  BlasProbe p = openblas("Prescott", avx512_bf16());
  p.user_coretype = "Prescott";
  const BlasChoice c = choose_blas_kernels(p);
  EXPECT_EQ(c.reexec_with, std::nullopt);
  EXPECT_EQ(c.chosen_by, "OPENBLAS_CORETYPE");
  EXPECT_THAT(c.summary, HasSubstr("runs Cooperlake kernels"));
}

// After our re-exec: never a second one, even if OpenBLAS ignored the
// variable, and the line says so.
TEST(BlasKernels, OurReexecHappensOnce) {
  BlasProbe p = openblas("Cooperlake", avx512_bf16());
  p.our_coretype = "Cooperlake";
  BlasChoice c = choose_blas_kernels(p);
  EXPECT_EQ(c.reexec_with, std::nullopt);
  EXPECT_EQ(c.chosen_by, "diffusiond");
  EXPECT_FALSE(c.fallback);
  p.corename = "Prescott";
  c = choose_blas_kernels(p);
  EXPECT_EQ(c.reexec_with, std::nullopt);
  EXPECT_TRUE(c.fallback);
  EXPECT_THAT(c.summary, HasSubstr("OpenBLAS did not take it"));
}

TEST(BlasKernels, AnotherBlasIsLeftAlone) {
  const BlasChoice c = choose_blas_kernels(BlasProbe{});
  EXPECT_EQ(c.chosen_by, "none");
  EXPECT_EQ(c.reexec_with, std::nullopt);
}

// The whole path in a process: the fallback is seen, the process execs
// itself once (same pid, same arguments) and comes back on the better core.
TEST(BlasKernels, TheProcessRestartsOnceOnTheBetterCore) {
  const testing::CommandOutput out = testing::run_command(
      std::string("env -u OPENBLAS_CORETYPE -u ") + kBlasGuardVariable + " " + BLAS_REEXEC_CHILD + " one 'two words'");
  ASSERT_EQ(out.exit_status, 0);
  ASSERT_GE(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[0].rfind("start pid=", 0), 0u);
  EXPECT_EQ(out.lines[1], out.lines[0]) << "the re-exec must keep the pid";
  EXPECT_THAT(out.lines, Contains("chosen_by=diffusiond fallback=0"));
  EXPECT_THAT(out.lines, Contains(HasSubstr("Cooperlake kernels (OPENBLAS_CORETYPE=Cooperlake set by diffusiond")));
  EXPECT_THAT(out.lines, Contains("arg=one"));
  EXPECT_THAT(out.lines, Contains("arg=two words"));
  EXPECT_EQ(std::count_if(out.lines.begin(), out.lines.end(),
                          [](const std::string& l) { return l.rfind("start pid=", 0) == 0; }),
            2);
}

}  // namespace
}  // namespace diffusiond
