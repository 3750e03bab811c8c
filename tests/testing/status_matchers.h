// GoogleMock matchers for absl::Status and absl::StatusOr, which Debian's
// Abseil does not ship: StatusIs(code, message_matcher) and IsOk().
#ifndef DIFFUSIOND_TESTS_TESTING_STATUS_MATCHERS_H_
#define DIFFUSIOND_TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace diffusiond::testing {

inline const absl::Status& get_status(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& get_status(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER_P2(StatusIs, code, message_matcher,
           std::string("has code ") + absl::StatusCodeToString(code)) {
  const absl::Status& status = get_status(arg);
  *result_listener << "status is " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = get_status(arg);
  *result_listener << "status is " << status;
  return status.ok();
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_STATUS_MATCHERS_H_
