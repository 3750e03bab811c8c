#include "core/util/confined_path.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/permission_error.h"

namespace diffusiond {
namespace {

// Whether `path` lies at or below `base`, component by component.
bool is_within(const std::filesystem::path& base, const std::filesystem::path& path) {
  return std::mismatch(base.begin(), base.end(), path.begin(), path.end()).first == base.end();
}

}  // namespace

absl::StatusOr<std::string> resolve_confined_path(absl::string_view root,
                                                  absl::string_view requested) {
  namespace fs = std::filesystem;
  if (requested.empty()) return absl::InvalidArgumentError("empty model path");
  // The filesystem would stop at the NUL: "demo\0/../../etc" would load
  // "demo" while the request (and its logs) named something else.
  if (requested.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("model path contains a NUL byte");
  }
  std::error_code ec;
  const fs::path base = fs::canonical(fs::path(std::string(root)), ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("models directory ", root, ": ", ec.message()));
  }
  const fs::path asked{std::string(requested)};
  const fs::path joined = asked.is_absolute() ? asked : base / asked;
  if (!fs::exists(joined, ec)) {
    // Refuse escapes before saying whether something exists out there.
    if (!is_within(base, joined.lexically_normal())) {
      return absl::PermissionDeniedError(
          absl::StrCat("'", bounded(requested), "' is outside the models directory ", base.string()));
    }
    // A folder the daemon may not search (chmod 000) hides what is in it:
    // that is not the model being absent.
    if (is_permission_error(ec)) {
      return absl::PermissionDeniedError(
          absl::StrCat("'", bounded(requested), "' cannot be looked up in ", base.string(), ": ", ec.message()));
    }
    return absl::NotFoundError(absl::StrCat("'", bounded(requested), "' does not exist in ", base.string()));
  }
  const fs::path resolved = fs::canonical(joined, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("'", bounded(requested), "': ", ec.message()));
  if (!is_within(base, resolved)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "'", bounded(requested), "' resolves to ", resolved.string(), ", outside the models directory ",
        base.string()));
  }
  return resolved.string();
}

}  // namespace diffusiond
