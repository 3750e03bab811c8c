// Which filesystem errors mean the daemon may not look, as opposed to the
// thing being absent or the filesystem failing: PERMISSION_DENIED for them,
// never NOT_FOUND (a hidden model is not a missing one) nor UNAVAILABLE (a
// retry will not help).
#ifndef DIFFUSIOND_CORE_UTIL_PERMISSION_ERROR_H_
#define DIFFUSIOND_CORE_UTIL_PERMISSION_ERROR_H_

#include <cerrno>
#include <system_error>

namespace diffusiond {

inline bool is_permission_error(const std::error_code& ec) {
  return ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted;
}

inline bool is_permission_error(int err) { return err == EACCES || err == EPERM; }

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_PERMISSION_ERROR_H_
