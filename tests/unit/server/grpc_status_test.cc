#include "server/grpc_status.h"

#include "gtest/gtest.h"

namespace diffusiond {
namespace {

TEST(GrpcStatus, KeepsCodeAndMessage) {
  const grpc::Status s = to_grpc_status(absl::ResourceExhaustedError("needed 3 GiB, available 1 GiB"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(), "needed 3 GiB, available 1 GiB");
  EXPECT_TRUE(to_grpc_status(absl::OkStatus()).ok());
}

TEST(GrpcStatus, EveryCanonicalCodeMapsToTheSameNumber) {
  for (int code = 1; code <= 16; ++code) {
    const grpc::Status s = to_grpc_status(absl::Status(static_cast<absl::StatusCode>(code), "x"));
    EXPECT_EQ(static_cast<int>(s.error_code()), code);
  }
}

}  // namespace
}  // namespace diffusiond
