// Early-return macros for absl::Status and absl::StatusOr.
//
// Debian's Abseil (20220623) ships no status macros, so the project carries
// these two. They are the only macros core/ defines for error handling.
#ifndef DIFFUSIOND_CORE_UTIL_STATUS_MACROS_H_
#define DIFFUSIOND_CORE_UTIL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status) and returns it from the enclosing
// function when it is not OK.
#define DIFFUSIOND_RETURN_IF_ERROR(expr)                 \
  do {                                                   \
    ::absl::Status diffusiond_status_ = (expr);          \
    if (!diffusiond_status_.ok()) return diffusiond_status_; \
  } while (false)

#define DIFFUSIOND_STATUS_CONCAT_INNER_(a, b) a##b
#define DIFFUSIOND_STATUS_CONCAT_(a, b) DIFFUSIOND_STATUS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, else
// moves the value into `lhs`, which may be a declaration (`auto x`).
#define DIFFUSIOND_ASSIGN_OR_RETURN(lhs, rexpr)                                \
  DIFFUSIOND_ASSIGN_OR_RETURN_IMPL_(                                           \
      DIFFUSIOND_STATUS_CONCAT_(diffusiond_statusor_, __LINE__), lhs, rexpr)

#define DIFFUSIOND_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                      \
  if (!statusor.ok()) return std::move(statusor).status();      \
  lhs = std::move(*statusor)

#endif  // DIFFUSIOND_CORE_UTIL_STATUS_MACROS_H_
