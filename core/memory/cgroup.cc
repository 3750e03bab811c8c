#include "core/memory/cgroup.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/util/file_text.h"

namespace diffusiond {
namespace {

struct Hierarchy {
  CgroupVersion version;
  std::string mount;        // e.g. <root>/sys/fs/cgroup/memory
  std::string cgroup_path;  // e.g. /kubepods/pod1/ctr, "/" in a namespace
};

std::string join_path(absl::string_view a, absl::string_view b) {
  while (absl::ConsumeSuffix(&a, "/")) {
  }
  while (absl::ConsumePrefix(&b, "/")) {
  }
  return b.empty() ? std::string(a) : absl::StrCat(a, "/", b);
}

// Returns the hierarchies named in /proc/self/cgroup for a controller: the
// v1 line whose controller list has it, and the v2 line "0::<path>".
std::vector<Hierarchy> find_hierarchies(absl::string_view root, absl::string_view proc_cgroup,
                                        absl::string_view v1_controller) {
  const std::string fs = join_path(root, "sys/fs/cgroup");
  std::vector<Hierarchy> found;
  for (absl::string_view line : absl::StrSplit(proc_cgroup, '\n')) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    const std::string path(parts[2].empty() ? "/" : parts[2]);
    if (parts[0] == "0" && parts[1].empty()) {
      found.push_back({CgroupVersion::kV2, fs, path});
      continue;
    }
    for (absl::string_view controller : absl::StrSplit(parts[1], ',')) {
      if (controller == v1_controller) {
        // v1 mounts co-mounted controllers under the joined name (cpu,cpuacct).
        found.push_back({CgroupVersion::kV1, join_path(fs, parts[1]), path});
      }
    }
  }
  // v1 first: on hybrid systems the controllers live in v1.
  std::stable_sort(found.begin(), found.end(), [](const Hierarchy& a, const Hierarchy& b) {
    return a.version == CgroupVersion::kV1 && b.version != CgroupVersion::kV1;
  });
  return found;
}

// Reads a limit out of one cgroup folder: empty when unlimited there;
// NOT_FOUND when the folder has no limit file.
using LimitReader =
    std::function<absl::StatusOr<std::optional<double>>(const std::string& dir, std::string* file)>;

struct Tightest {
  CgroupVersion version = CgroupVersion::kNone;
  std::optional<double> limit;
  std::string source;
};

// Walks each hierarchy from the process's cgroup up to the mount point,
// keeping the smallest limit; the first hierarchy with any limit file wins.
absl::StatusOr<Tightest> tightest_limit(absl::string_view root, absl::string_view v1_controller,
                                        const LimitReader& v1, const LimitReader& v2) {
  Tightest result;
  absl::StatusOr<std::string> proc_cgroup = read_text_file(join_path(root, "proc/self/cgroup"));
  if (!proc_cgroup.ok()) {
    if (absl::IsNotFound(proc_cgroup.status())) return result;
    return proc_cgroup.status();
  }
  for (const Hierarchy& h : find_hierarchies(root, *proc_cgroup, v1_controller)) {
    const LimitReader& read = h.version == CgroupVersion::kV1 ? v1 : v2;
    bool any_file = false;
    std::string dir = h.cgroup_path;
    while (true) {
      std::string file;
      absl::StatusOr<std::optional<double>> limit = read(join_path(h.mount, dir), &file);
      if (limit.ok()) {
        any_file = true;
        if (limit->has_value() && (!result.limit.has_value() || **limit < *result.limit)) {
          result.limit = **limit;
          result.source = file;
        }
      } else if (!absl::IsNotFound(limit.status())) {
        return limit.status();
      }
      if (dir.empty() || dir == "/") break;
      const size_t slash = dir.find_last_of('/');
      dir = slash == std::string::npos || slash == 0 ? "/" : dir.substr(0, slash);
    }
    if (any_file) {
      result.version = h.version;
      return result;
    }
  }
  return result;
}

// Reads `dir`/`name` and parses it with `parse`, naming the file in errors.
template <typename Parse>
absl::StatusOr<std::optional<double>> read_limit_file(const std::string& dir, const char* name,
                                                      std::string* file, Parse parse) {
  *file = join_path(dir, name);
  absl::StatusOr<std::string> text = read_text_file(*file);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::optional<double>> limit = parse(*text);
  if (!limit.ok()) return absl::InvalidArgumentError(absl::StrCat(*file, ": ", limit.status().message()));
  return limit;
}

absl::StatusOr<std::optional<double>> memory_limit_in(const std::string& dir, const char* name,
                                                      std::string* file) {
  return read_limit_file(dir, name, file, [](absl::string_view text) -> absl::StatusOr<std::optional<double>> {
    absl::StatusOr<std::optional<int64_t>> bytes = parse_cgroup_limit(text);
    if (!bytes.ok()) return bytes.status();
    if (!bytes->has_value()) return std::optional<double>();
    return std::optional<double>(static_cast<double>(**bytes));
  });
}

// cgroup v1 keeps the CPU quota and its period in two files.
absl::StatusOr<std::optional<double>> v1_cpu_limit_in(const std::string& dir, std::string* file) {
  absl::StatusOr<std::optional<double>> period =
      read_limit_file(dir, "cpu.cfs_period_us", file, [](absl::string_view text) -> absl::StatusOr<std::optional<double>> {
        int64_t us = 0;
        if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &us) || us <= 0) {
          return absl::InvalidArgumentError(absl::StrCat("expected a positive period, got '", text, "'"));
        }
        return std::optional<double>(static_cast<double>(us));
      });
  if (!period.ok()) return period.status();
  return read_limit_file(dir, "cpu.cfs_quota_us", file, [&](absl::string_view text) -> absl::StatusOr<std::optional<double>> {
    int64_t us = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &us) || us == 0 || us < -1) {
      return absl::InvalidArgumentError(absl::StrCat("expected a quota in microseconds or -1, got '", text, "'"));
    }
    if (us == -1) return std::optional<double>();
    return std::optional<double>(static_cast<double>(us) / **period);
  });
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> parse_cgroup_limit(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text == "max") return std::optional<int64_t>();
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a byte count or 'max', got '", text, "'"));
  }
  if (value >= static_cast<uint64_t>(kCgroupV1UnlimitedThreshold)) {
    return std::optional<int64_t>();
  }
  return std::optional<int64_t>(static_cast<int64_t>(value));
}

absl::StatusOr<std::optional<double>> parse_cgroup_cpu_max(absl::string_view text) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  int64_t quota = 0, period = 100000;  // the kernel's default period
  if (fields.empty() || fields.size() > 2 ||
      (fields[0] != "max" && (!absl::SimpleAtoi(fields[0], &quota) || quota <= 0)) ||
      (fields.size() == 2 && (!absl::SimpleAtoi(fields[1], &period) || period <= 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected '<quota|max> [period]' in microseconds, got '", text, "'"));
  }
  if (fields[0] == "max") return std::optional<double>();
  return std::optional<double>(static_cast<double>(quota) / static_cast<double>(period));
}

absl::StatusOr<CgroupMemoryLimit> read_cgroup_memory_limit(absl::string_view root) {
  absl::StatusOr<Tightest> t = tightest_limit(
      root, "memory",
      [](const std::string& dir, std::string* file) { return memory_limit_in(dir, "memory.limit_in_bytes", file); },
      [](const std::string& dir, std::string* file) { return memory_limit_in(dir, "memory.max", file); });
  if (!t.ok()) return t.status();
  CgroupMemoryLimit result;
  result.version = t->version;
  if (t->limit.has_value()) result.limit_bytes = static_cast<int64_t>(*t->limit);
  result.source = t->source;
  return result;
}

absl::StatusOr<CgroupCpuLimit> read_cgroup_cpu_limit(absl::string_view root) {
  absl::StatusOr<Tightest> t = tightest_limit(
      root, "cpu", v1_cpu_limit_in, [](const std::string& dir, std::string* file) {
        return read_limit_file(dir, "cpu.max", file, parse_cgroup_cpu_max);
      });
  if (!t.ok()) return t.status();
  return CgroupCpuLimit{t->version, t->limit, t->source};
}

}  // namespace diffusiond
