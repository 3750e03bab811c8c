#include "core/memory/process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/util/file_text.h"

namespace diffusiond {
namespace {

// Finds "<field>:   <n> kB" in procfs text and returns n * 1024.
absl::StatusOr<int64_t> find_kib_field(absl::string_view text,
                                       absl::string_view field) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, field) || !absl::ConsumePrefix(&line, ":")) {
      continue;
    }
    line = absl::StripAsciiWhitespace(line);
    const bool in_kib = absl::ConsumeSuffix(&line, "kB");
    line = absl::StripAsciiWhitespace(line);
    int64_t value = 0;
    if (!absl::SimpleAtoi(line, &value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("field ", field, " has malformed value '", line, "'"));
    }
    return in_kib ? value * 1024 : value;
  }
  return absl::InvalidArgumentError(absl::StrCat("field ", field, " is missing"));
}

}  // namespace

absl::StatusOr<ProcessMemory> parse_proc_status(absl::string_view text) {
  ProcessMemory m;
  absl::StatusOr<int64_t> rss = find_kib_field(text, "VmRSS");
  if (!rss.ok()) return rss.status();
  absl::StatusOr<int64_t> hwm = find_kib_field(text, "VmHWM");
  if (!hwm.ok()) return hwm.status();
  absl::StatusOr<int64_t> size = find_kib_field(text, "VmSize");
  if (!size.ok()) return size.status();
  m.rss_bytes = *rss;
  m.peak_rss_bytes = *hwm;
  m.virtual_bytes = *size;
  return m;
}

absl::StatusOr<ProcessMemory> read_process_memory() {
  absl::StatusOr<std::string> text = read_text_file("/proc/self/status");
  if (!text.ok()) return absl::UnavailableError(text.status().message());
  absl::StatusOr<ProcessMemory> m = parse_proc_status(*text);
  if (!m.ok()) {
    return absl::UnavailableError(
        absl::StrCat("/proc/self/status: ", m.status().message()));
  }
  return m;
}

absl::Status reset_peak_rss() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("/proc/self/clear_refs: ", std::strerror(errno)));
  }
  // "5" resets the peak RSS (VmHWM) only; page reference bits are untouched.
  const ssize_t written = ::write(fd, "5", 1);
  const int err = errno;
  ::close(fd);
  if (written != 1) {
    return absl::UnavailableError(
        absl::StrCat("/proc/self/clear_refs: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> parse_mem_total_bytes(absl::string_view text) {
  return find_kib_field(text, "MemTotal");
}

absl::StatusOr<int64_t> read_mem_total_bytes(absl::string_view meminfo_path) {
  absl::StatusOr<std::string> text = read_text_file(meminfo_path);
  if (!text.ok()) return text.status();
  absl::StatusOr<int64_t> total = parse_mem_total_bytes(*text);
  if (!total.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(meminfo_path, ": ", total.status().message()));
  }
  return total;
}

}  // namespace diffusiond
