// The one place where exceptions become statuses. libtorch (and the
// standard library under it) reports failures, an allocation above all, by
// throwing; no exception may leave core/ into a server thread, so every call
// into code that throws goes through status_of. A forward stopped by
// check_cancelled() (cancellation_scope.h) also ends here, as its reason.
#ifndef DIFFUSIOND_CORE_UTIL_EXCEPTION_STATUS_H_
#define DIFFUSIOND_CORE_UTIL_EXCEPTION_STATUS_H_

#include <exception>
#include <new>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/util/cancellation_scope.h"

namespace diffusiond {

// Returns f() (an absl::Status or absl::StatusOr), or, if it throws,
// the reason of an OperationCancelled (CANCELLED, or UNAVAILABLE for a
// drain), RESOURCE_EXHAUSTED "out of memory in <what>" for std::bad_alloc and
// INTERNAL "<what> failed: <message>" for any other exception. `what` names
// the work for a person, e.g. "the Z-Image forward".
template <typename F>
auto status_of(absl::string_view what, F&& f) -> decltype(std::forward<F>(f)()) {
  try {
    return std::forward<F>(f)();
  } catch (const OperationCancelled& cancelled) {
    return cancelled.status();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory in ", what));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, " failed: ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(what, " failed"));
  }
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_EXCEPTION_STATUS_H_
