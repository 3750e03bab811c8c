#include "core/cpu/blas_kernels.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace diffusiond {
namespace {

// The ISA level of an OpenBLAS core: 0 SSE-only sets, 1 AVX, 2 AVX2, 3
// AVX-512. Unknown names rank 0: a core we cannot place is treated as
// generic only if the CPU runs a named better one.
int core_level(const std::string& corename) {
  const std::string c = absl::AsciiStrToLower(corename);
  for (const char* name : {"skylakex", "cooperlake", "sapphirerapids"}) {
    if (c == name) return 3;
  }
  for (const char* name : {"haswell", "zen", "excavator"}) {
    if (c == name) return 2;
  }
  for (const char* name : {"sandybridge", "bulldozer", "piledriver", "steamroller"}) {
    if (c == name) return 1;
  }
  return 0;
}

// "OpenBLAS 0.3.21" from openblas_get_config()'s first two words.
std::string library_of(const std::string& config) {
  std::vector<std::string> words = absl::StrSplit(config, ' ', absl::SkipEmpty());
  if (words.size() >= 2) return absl::StrCat(words[0], " ", words[1]);
  return config.empty() ? "OpenBLAS" : config;
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

}  // namespace

std::optional<std::string> best_openblas_coretype(const CpuFeatures& cpu) {
  if (cpu.avx512() && cpu.avx512bf16) return "Cooperlake";
  if (cpu.avx512()) return "SkylakeX";
  if (cpu.avx2 && cpu.fma) return "Haswell";
  return std::nullopt;
}

BlasChoice choose_blas_kernels(const BlasProbe& probe) {
  BlasChoice choice;
  if (probe.corename.empty()) {
    choice.chosen_by = "none";
    choice.summary = "BLAS is not OpenBLAS (kernels not checked)";
    return choice;
  }
  const std::string library = library_of(probe.config);
  choice.library = library;
  choice.corename = probe.corename;
  const std::optional<std::string> best = best_openblas_coretype(probe.cpu);
  choice.fallback = best.has_value() && core_level(probe.corename) < core_level(*best);
  const std::string cpu = describe(probe.cpu);
  if (probe.user_coretype.has_value()) {
    choice.chosen_by = "OPENBLAS_CORETYPE";
    choice.summary =
        absl::StrCat(library, ", ", probe.corename, " kernels (OPENBLAS_CORETYPE=", *probe.user_coretype, ")");
    if (choice.fallback) {
      absl::StrAppend(&choice.summary, "; this CPU (", cpu, ") runs ", *best, " kernels, several times faster");
    }
    return choice;
  }
  if (probe.our_coretype.has_value()) {
    choice.chosen_by = "diffusiond";
    choice.summary = absl::StrCat(library, ", ", probe.corename, " kernels (OPENBLAS_CORETYPE=", *probe.our_coretype,
                                  " set by diffusiond: OpenBLAS fell back to generic kernels on this CPU, ", cpu, ")");
    if (choice.fallback) {
      absl::StrAppend(&choice.summary, "; OpenBLAS did not take it, float32 matmuls run on generic kernels");
    }
    return choice;
  }
  choice.chosen_by = "openblas";
  if (choice.fallback) {
    choice.reexec_with = *best;
    choice.summary = absl::StrCat(library, ", ", probe.corename, " kernels: a generic fallback on a CPU with ", cpu,
                                  "; restarting with OPENBLAS_CORETYPE=", *best);
    return choice;
  }
  choice.summary = absl::StrCat(library, ", ", probe.corename, " kernels (detected by OpenBLAS)");
  return choice;
}

BlasProbe probe_blas_kernels() {
  BlasProbe probe;
  using NameFn = char* (*)();
  if (auto corename = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"))) {
    if (const char* c = corename()) probe.corename = c;
  }
  if (auto config = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"))) {
    if (const char* c = config()) probe.config = c;
  }
  absl::StripAsciiWhitespace(&probe.corename);
  probe.cpu = detect_cpu_features();
  probe.our_coretype = env(kBlasGuardVariable);
  // Our own re-exec set OPENBLAS_CORETYPE too: that one is not the user's.
  if (!probe.our_coretype.has_value()) probe.user_coretype = env("OPENBLAS_CORETYPE");
  return probe;
}

BlasChoice ensure_blas_kernels(char** argv, const std::function<BlasProbe()>& probe) {
  // The guard tells the new image the choice was made, so it never loops.
  BlasChoice choice = choose_blas_kernels(probe());
  if (!choice.reexec_with.has_value()) return choice;
  ::setenv("OPENBLAS_CORETYPE", choice.reexec_with->c_str(), 1);
  ::setenv(kBlasGuardVariable, choice.reexec_with->c_str(), 1);
  ::execv("/proc/self/exe", argv);
  // Still here: the exec failed. Go on with the generic kernels, saying so.
  const int error = errno;
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv(kBlasGuardVariable);
  choice.reexec_with.reset();
  absl::StrAppend(&choice.summary, "; the restart failed (", std::strerror(error), "), staying on generic kernels");
  return choice;
}

}  // namespace diffusiond
