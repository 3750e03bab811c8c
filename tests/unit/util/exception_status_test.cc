#include "core/util/exception_status.h"

#include <new>
#include <stdexcept>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

TEST(StatusOf, PassesResultsThrough) {
  absl::StatusOr<int> v = status_of("the sum", []() -> absl::StatusOr<int> { return 42; });
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 42);
  EXPECT_THAT(status_of("the check", [] { return absl::InvalidArgumentError("bad shape"); }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad shape")));
}

TEST(StatusOf, AllocationFailureIsResourceExhausted) {
  EXPECT_THAT(status_of("the forward", []() -> absl::Status { throw std::bad_alloc(); }),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("out of memory in the forward")));
}

TEST(StatusOf, OtherExceptionsAreInternalAndSayWhat) {
  EXPECT_THAT(status_of("the forward", []() -> absl::StatusOr<int> { throw std::runtime_error("c10 said no"); }),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("the forward failed: c10 said no")));
  EXPECT_THAT(status_of("the forward", []() -> absl::Status { throw 7; }),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("the forward failed")));
}

}  // namespace
}  // namespace diffusiond
