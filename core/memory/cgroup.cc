#include "core/memory/cgroup.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/util/file_text.h"

namespace diffusiond {
namespace {

struct Hierarchy {
  CgroupMemoryLimit::Version version;
  std::string mount;        // e.g. <root>/sys/fs/cgroup/memory
  std::string cgroup_path;  // e.g. /kubepods/pod1/ctr, "/" in a namespace
  const char* file;         // memory.max or memory.limit_in_bytes
};

std::string join_path(absl::string_view a, absl::string_view b) {
  while (absl::ConsumeSuffix(&a, "/")) {
  }
  while (absl::ConsumePrefix(&b, "/")) {
  }
  return b.empty() ? std::string(a) : absl::StrCat(a, "/", b);
}

// Returns the memory hierarchies named in /proc/self/cgroup: the v1 line
// whose controller list has "memory", and the v2 line "0::<path>".
std::vector<Hierarchy> find_hierarchies(absl::string_view root,
                                        absl::string_view proc_cgroup) {
  const std::string fs = join_path(root, "sys/fs/cgroup");
  std::vector<Hierarchy> found;
  for (absl::string_view line : absl::StrSplit(proc_cgroup, '\n')) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    const std::string path(parts[2].empty() ? "/" : parts[2]);
    if (parts[0] == "0" && parts[1].empty()) {
      found.push_back({CgroupMemoryLimit::Version::kV2, fs, path, "memory.max"});
      continue;
    }
    for (absl::string_view controller : absl::StrSplit(parts[1], ',')) {
      if (controller == "memory") {
        found.push_back({CgroupMemoryLimit::Version::kV1, join_path(fs, "memory"),
                         path, "memory.limit_in_bytes"});
      }
    }
  }
  // v1 first: on hybrid systems the memory controller lives in v1.
  std::stable_sort(found.begin(), found.end(), [](const Hierarchy& a, const Hierarchy& b) {
    return a.version == CgroupMemoryLimit::Version::kV1 &&
           b.version != CgroupMemoryLimit::Version::kV1;
  });
  return found;
}

// Walks from the cgroup up to the mount point, keeping the smallest limit.
// Returns whether any limit file existed.
absl::StatusOr<bool> tightest_limit(const Hierarchy& h, CgroupMemoryLimit* out) {
  bool any_file = false;
  std::string dir = h.cgroup_path;
  while (true) {
    const std::string file = join_path(join_path(h.mount, dir), h.file);
    absl::StatusOr<std::string> text = read_text_file(file);
    if (text.ok()) {
      any_file = true;
      absl::StatusOr<std::optional<int64_t>> limit = parse_cgroup_limit(*text);
      if (!limit.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": ", limit.status().message()));
      }
      if (limit->has_value() &&
          (!out->limit_bytes.has_value() || **limit < *out->limit_bytes)) {
        out->limit_bytes = **limit;
        out->source = file;
      }
    } else if (!absl::IsNotFound(text.status())) {
      return text.status();
    }
    if (dir.empty() || dir == "/") break;
    const size_t slash = dir.find_last_of('/');
    dir = slash == std::string::npos || slash == 0 ? "/" : dir.substr(0, slash);
  }
  return any_file;
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

absl::StatusOr<CgroupMemoryLimit> read_cgroup_memory_limit(absl::string_view root) {
  CgroupMemoryLimit result;
  absl::StatusOr<std::string> proc_cgroup =
      read_text_file(join_path(root, "proc/self/cgroup"));
  if (!proc_cgroup.ok()) {
    if (absl::IsNotFound(proc_cgroup.status())) return result;
    return proc_cgroup.status();
  }
  for (const Hierarchy& h : find_hierarchies(root, *proc_cgroup)) {
    absl::StatusOr<bool> any_file = tightest_limit(h, &result);
    if (!any_file.ok()) return any_file.status();
    if (*any_file) {
      result.version = h.version;
      return result;
    }
  }
  return result;
}

}  // namespace diffusiond
