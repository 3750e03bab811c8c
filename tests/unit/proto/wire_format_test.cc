// check_wire_tensor: the contract checks, without torch (the same checks
// run in the daemon through from_wire, tested in wire_tensor_test).
#include "proto/wire_format.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

v1::Tensor wire_tensor(int dtype, std::vector<int64_t> shape, std::string data) {
  v1::Tensor t;
  t.set_dtype(static_cast<v1::DType>(dtype));
  for (int64_t d : shape) t.add_shape(d);
  t.set_data(std::move(data));
  return t;
}

TEST(WireFormat, SizesAndNamesCoverTheEnum) {
  EXPECT_EQ(wire_dtype_size(v1::DTYPE_FLOAT32), 4);
  EXPECT_EQ(wire_dtype_size(v1::DTYPE_BFLOAT16), 2);
  EXPECT_EQ(wire_dtype_size(v1::DTYPE_FLOAT64), 8);
  EXPECT_EQ(wire_dtype_size(v1::DTYPE_BOOL), 1);
  EXPECT_EQ(wire_dtype_size(v1::DTYPE_UNSPECIFIED), 0);
  EXPECT_EQ(wire_dtype_size(99), 0);
  EXPECT_EQ(wire_dtype_size(-1), 0);
  EXPECT_EQ(wire_dtype_name(v1::DTYPE_UINT8), "uint8");
  EXPECT_EQ(wire_dtype_name(99), "unknown dtype 99");
  for (int d = v1::DType_MIN + 1; d <= v1::DType_MAX; ++d) EXPECT_GT(wire_dtype_size(d), 0) << d;
}

TEST(WireFormat, ValidTensorReportsItsCounts) {
  absl::StatusOr<WireTensorLayout> layout =
      check_wire_tensor(wire_tensor(v1::DTYPE_FLOAT16, {2, 3}, std::string(12, '\0')), "x");
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->dtype, v1::DTYPE_FLOAT16);
  EXPECT_EQ(layout->numel, 6);
  EXPECT_EQ(layout->nbytes, 12);

  layout = check_wire_tensor(wire_tensor(v1::DTYPE_INT32, {}, std::string(4, '\0')), "x");
  ASSERT_THAT(layout, IsOk());
  EXPECT_EQ(layout->numel, 1);
}

TEST(WireFormat, RefusesEachBrokenRule) {
  EXPECT_THAT(check_wire_tensor(wire_tensor(0, {1}, "a"), "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a: dtype is unspecified")));
  EXPECT_THAT(check_wire_tensor(wire_tensor(99, {1}, "a"), "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown dtype 99")));
  EXPECT_THAT(check_wire_tensor(wire_tensor(v1::DTYPE_UINT8, {-2}, ""), "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative")));
  EXPECT_THAT(check_wire_tensor(
                  wire_tensor(v1::DTYPE_UINT8, {int64_t{1} << 40, int64_t{1} << 40}, ""), "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64 bits")));
  EXPECT_THAT(check_wire_tensor(wire_tensor(v1::DTYPE_INT64, {3}, std::string(23, '\0')), "a"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("int64 shape [3] needs 24 bytes of data, got 23")));
  EXPECT_THAT(check_wire_tensor(wire_tensor(v1::DTYPE_BOOL, {1}, "\x05"), "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 0 or 1")));
}

TEST(WireFormat, AHugeShapeIsQuotedBounded) {
  // 10^5 dimensions of 1 and a wrong byte count: the message names the
  // problem without echoing every dimension (it must fit gRPC's metadata).
  const absl::Status status =
      check_wire_tensor(wire_tensor(v1::DTYPE_UINT8, std::vector<int64_t>(100000, 1), "ab"), "a").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(status.message().size(), 1000u);
  EXPECT_THAT(std::string(status.message()), HasSubstr("bytes)"));
}

}  // namespace
}  // namespace diffusiond
