// Reading small text files (procfs, sysfs, config) whole into a string.
//
// Not here: checkpoint data, which is never read whole (core/checkpoint).
#ifndef DIFFUSIOND_CORE_UTIL_FILE_TEXT_H_
#define DIFFUSIOND_CORE_UTIL_FILE_TEXT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Returns the contents of `path`, at most `max_bytes` of it. Returns
// NOT_FOUND if the file does not exist, FAILED_PRECONDITION naming the path
// if it is not a regular file (checked without blocking, see
// regular_file.h) or is larger than `max_bytes`, UNAVAILABLE for other
// read errors.
absl::StatusOr<std::string> read_text_file(absl::string_view path,
                                           int64_t max_bytes = 1 << 20);

// INVALID_ARGUMENT "<path>: <problem>": a file that was read but says
// something wrong (a malformed config or tokenizer file).
absl::Status bad_file(absl::string_view path, absl::string_view problem);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_FILE_TEXT_H_
