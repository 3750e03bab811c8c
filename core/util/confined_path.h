// Resolving a client-supplied path inside a root folder, so that a remote
// caller cannot load files outside the models directory: "..", absolute
// paths elsewhere, and symlinks that lead out are all refused.
#ifndef DIFFUSIOND_CORE_UTIL_CONFINED_PATH_H_
#define DIFFUSIOND_CORE_UTIL_CONFINED_PATH_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Returns the canonical absolute path of `requested` (relative to `root`, or
// absolute) with every symlink resolved. PERMISSION_DENIED if it lies
// outside `root`'s canonical path or if a folder on the way may not be
// searched (EACCES); NOT_FOUND if it does not exist;
// INVALID_ARGUMENT for an empty path or one with a NUL byte;
// FAILED_PRECONDITION if `root` itself does not exist.
absl::StatusOr<std::string> resolve_confined_path(absl::string_view root,
                                                  absl::string_view requested);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_CONFINED_PATH_H_
