// from_wire / to_wire: every wire dtype round-trips bit for bit, and every
// malformed tensor is refused before its bytes are used.
#include "server/wire_tensor.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

v1::Tensor wire_tensor(v1::DType dtype, std::vector<int64_t> shape, std::string data) {
  v1::Tensor t;
  t.set_dtype(dtype);
  for (int64_t d : shape) t.add_shape(d);
  t.set_data(std::move(data));
  return t;
}

torch::Tensor round_trip(const torch::Tensor& tensor, v1::DType expected_dtype) {
  v1::Tensor wire;
  EXPECT_THAT(to_wire(tensor, &wire), IsOk());
  EXPECT_EQ(wire.dtype(), expected_dtype);
  EXPECT_EQ(static_cast<int64_t>(wire.data().size()), tensor.numel() * tensor.element_size());
  absl::StatusOr<torch::Tensor> back = from_wire(wire, "t");
  EXPECT_THAT(back, IsOk());
  if (!back.ok()) return {};
  EXPECT_TRUE(back->is_contiguous());
  EXPECT_EQ(back->scalar_type(), tensor.scalar_type());
  EXPECT_EQ(back->sizes(), tensor.sizes());
  return *back;
}

TEST(WireTensor, EveryDtypeRoundTripsExactly) {
  const torch::Tensor base = torch::linspace(-3.5, 7.25, 24).reshape({2, 3, 4});
  const struct {
    torch::ScalarType torch;
    v1::DType wire;
  } cases[] = {
      {torch::kFloat32, v1::DTYPE_FLOAT32},   {torch::kFloat16, v1::DTYPE_FLOAT16},
      {torch::kBFloat16, v1::DTYPE_BFLOAT16}, {torch::kFloat64, v1::DTYPE_FLOAT64},
      {torch::kInt64, v1::DTYPE_INT64},       {torch::kInt32, v1::DTYPE_INT32},
      {torch::kUInt8, v1::DTYPE_UINT8},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c10::toString(c.torch));
    const torch::Tensor t = (c.torch == torch::kUInt8 ? base.abs() : base).to(c.torch);
    EXPECT_TRUE(torch::equal(round_trip(t, c.wire), t));
  }
  const torch::Tensor flags = torch::tensor({true, false, true, true}).reshape({2, 2});
  EXPECT_TRUE(torch::equal(round_trip(flags, v1::DTYPE_BOOL), flags));
}

TEST(WireTensor, BytesAreLittleEndianRowMajor) {
  v1::Tensor wire;
  ASSERT_THAT(to_wire(torch::tensor({1.0f, -2.0f}), &wire), IsOk());
  EXPECT_EQ(wire.data(), std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));

  ASSERT_THAT(to_wire(torch::tensor({int64_t{0x0102030405060708}}), &wire), IsOk());
  EXPECT_EQ(wire.data(), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));

  absl::StatusOr<torch::Tensor> t =
      from_wire(wire_tensor(v1::DTYPE_INT32, {2, 2},
                            std::string("\x01\0\0\0\x02\0\0\0\x03\0\0\0\x04\0\0\0", 16)),
                "t");
  ASSERT_THAT(t, IsOk());
  EXPECT_TRUE(torch::equal(*t, torch::tensor({{1, 2}, {3, 4}}, torch::kInt32)));
}

TEST(WireTensor, NonContiguousInputIsSentRowMajor) {
  const torch::Tensor m = torch::arange(6, torch::kFloat32).reshape({2, 3});
  const torch::Tensor transposed = m.t();  // [[0, 3], [1, 4], [2, 5]]
  ASSERT_FALSE(transposed.is_contiguous());
  v1::Tensor wire;
  ASSERT_THAT(to_wire(transposed, &wire), IsOk());
  EXPECT_THAT(wire.shape(), ::testing::ElementsAre(3, 2));
  absl::StatusOr<torch::Tensor> back = from_wire(wire, "t");
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(torch::equal(*back, transposed));
  const float* values = reinterpret_cast<const float*>(wire.data().data());
  EXPECT_EQ(values[1], 3.0f);

  const torch::Tensor strided = torch::arange(10, torch::kInt64).slice(0, 1, 10, 3);  // 1, 4, 7
  ASSERT_THAT(to_wire(strided, &wire), IsOk());
  back = from_wire(wire, "t");
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(torch::equal(*back, torch::tensor({1, 4, 7}, torch::kInt64)));
}

TEST(WireTensor, ScalarsAndEmptyTensors) {
  const torch::Tensor scalar = torch::tensor(2.5f).reshape({});
  EXPECT_TRUE(torch::equal(round_trip(scalar, v1::DTYPE_FLOAT32), scalar));

  const torch::Tensor empty = torch::empty({0, 3}, torch::kBFloat16);
  v1::Tensor wire;
  ASSERT_THAT(to_wire(empty, &wire), IsOk());
  EXPECT_TRUE(wire.data().empty());
  absl::StatusOr<torch::Tensor> back = from_wire(wire, "t");
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->sizes(), empty.sizes());

  back = from_wire(wire_tensor(v1::DTYPE_FLOAT32, {0, int64_t{1} << 40}, ""), "t");
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->numel(), 0);
}

TEST(WireTensor, WrongByteCountNamesBothCountsDtypeAndShape) {
  EXPECT_THAT(
      from_wire(wire_tensor(v1::DTYPE_FLOAT32, {2, 3}, std::string(20, '\0')), "input \"x\""),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("input \"x\""), HasSubstr("float32"), HasSubstr("[2, 3]"),
                     HasSubstr("needs 24 bytes"), HasSubstr("got 20"))));
  EXPECT_THAT(
      from_wire(wire_tensor(v1::DTYPE_BFLOAT16, {0}, "xx"), "y"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs 0 bytes of data, got 2")));
  EXPECT_THAT(
      from_wire(wire_tensor(v1::DTYPE_INT64, {}, std::string(16, '\0')), "y"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs 8 bytes of data, got 16")));
}

TEST(WireTensor, NegativeDimensionIsRefused) {
  EXPECT_THAT(from_wire(wire_tensor(v1::DTYPE_FLOAT32, {2, -1}, ""), "latents"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("latents"), HasSubstr("[2, -1]"), HasSubstr("negative"))));
}

TEST(WireTensor, ElementCountOverflowIsRefused) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_THAT(from_wire(wire_tensor(v1::DTYPE_UINT8, {big, big}, ""), "x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("x: "), HasSubstr("[1099511627776, 1099511627776]"),
                             HasSubstr("64 bits"))));
  // The element count fits but the byte count does not.
  EXPECT_THAT(from_wire(wire_tensor(v1::DTYPE_FLOAT64, {int64_t{1} << 61}, ""), "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bytes than fit in 64 bits")));
  // Empty, but its strides would overflow.
  EXPECT_THAT(from_wire(wire_tensor(v1::DTYPE_FLOAT32, {big, big, 0}, ""), "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64 bits")));
}

TEST(WireTensor, UnspecifiedAndUnknownDtypesAreRefused) {
  EXPECT_THAT(from_wire(wire_tensor(v1::DTYPE_UNSPECIFIED, {1}, "x"), "caption"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("caption"), HasSubstr("unspecified"))));
  // A newer client's enum value arrives as a bare number (field 1, varint 99).
  v1::Tensor unknown;
  ASSERT_TRUE(unknown.ParseFromString(std::string("\x08\x63", 2)));
  ASSERT_EQ(unknown.dtype(), 99);
  EXPECT_THAT(from_wire(unknown, "caption"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown dtype 99")));
}

TEST(WireTensor, BoolBytesMustBeZeroOrOne) {
  EXPECT_THAT(from_wire(wire_tensor(v1::DTYPE_BOOL, {3}, std::string("\x01\x00\x02", 3)), "mask"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("mask"), HasSubstr("element 2"), HasSubstr("stored as 2"))));
}

TEST(WireTensor, DtypesWithoutWireEnumAreRefused) {
  v1::Tensor wire;
  for (torch::ScalarType type : {torch::kInt16, torch::kInt8, torch::kComplexFloat}) {
    EXPECT_THAT(to_wire(torch::zeros({2}, type), &wire),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(c10::toString(type)), HasSubstr("no wire dtype"))));
  }
  EXPECT_THAT(to_wire(torch::Tensor(), &wire),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("undefined")));
  EXPECT_THAT(to_wire(torch::eye(3).to_sparse(), &wire),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("only dense")));
}

v1::NamedTensor named(const std::string& name, const v1::Tensor& tensor) {
  v1::NamedTensor n;
  n.set_name(name);
  *n.mutable_tensor() = tensor;
  return n;
}

TEST(WireTensor, NamedInputsBecomeAMap) {
  google::protobuf::RepeatedPtrField<v1::NamedTensor> inputs;
  *inputs.Add() = named("x", wire_tensor(v1::DTYPE_FLOAT32, {1}, std::string(4, '\0')));
  *inputs.Add() = named("t", wire_tensor(v1::DTYPE_INT64, {2}, std::string(16, '\0')));
  absl::StatusOr<std::map<std::string, torch::Tensor>> map = from_wire(inputs);
  ASSERT_THAT(map, IsOk());
  ASSERT_EQ(map->size(), 2u);
  EXPECT_EQ(map->at("t").scalar_type(), torch::kInt64);
  EXPECT_EQ(map->at("x").sizes(), torch::IntArrayRef({1}));
}

TEST(WireTensor, NamedInputsRefuseEmptyRepeatedAndBadTensors) {
  const v1::Tensor good = wire_tensor(v1::DTYPE_UINT8, {1}, "a");
  google::protobuf::RepeatedPtrField<v1::NamedTensor> inputs;
  *inputs.Add() = named("x", good);
  *inputs.Add() = named("", good);
  EXPECT_THAT(from_wire(inputs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 1 has an empty name")));

  inputs.Mutable(1)->set_name("x");
  EXPECT_THAT(from_wire(inputs), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("input \"x\" is given more than once")));

  inputs.Mutable(1)->set_name("cap_feats_0");
  inputs.Mutable(1)->mutable_tensor()->set_data("ab");
  EXPECT_THAT(from_wire(inputs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("input \"cap_feats_0\""), HasSubstr("got 2"))));

  inputs.Mutable(1)->clear_tensor();
  EXPECT_THAT(from_wire(inputs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unspecified")));
}

}  // namespace
}  // namespace diffusiond
