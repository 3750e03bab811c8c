// .safetensors files to wire tensors and back, byte for byte, for every
// dtype the wire carries.
#include <filesystem>
#include <string>

#include "core/checkpoint/safetensors_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "clients/diffusionctl/tensor_file.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond::ctl {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct FileTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// Bytes 0, 1, 2, ... (as bools: 0, 1, 0, 1, ...).
std::string pattern(size_t n, bool as_bool = false) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(as_bool ? i % 2 : i * 7 + 1);
  return bytes;
}

std::string write_file(const TempDir& dir, const std::string& name,
                       const std::vector<FileTensor>& tensors) {
  std::vector<TensorSpec> specs;
  for (const FileTensor& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
  const std::string path = dir.path(name);
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> writer =
      SafetensorsWriter::create(path, specs);
  EXPECT_THAT(writer, IsOk());
  for (const FileTensor& t : tensors) {
    EXPECT_THAT((*writer)->append(t.bytes.data(), static_cast<int64_t>(t.bytes.size())), IsOk());
  }
  EXPECT_THAT((*writer)->close(), IsOk());
  return path;
}

TEST(TensorFile, DtypesMapBothWays) {
  for (int d = v1::DType_MIN; d <= v1::DType_MAX; ++d) {
    const auto wire = static_cast<v1::DType>(d);
    const std::optional<DType> file = safetensors_dtype(wire);
    if (wire == v1::DTYPE_UNSPECIFIED) {
      EXPECT_FALSE(file.has_value());
      continue;
    }
    ASSERT_TRUE(file.has_value()) << d;
    EXPECT_EQ(wire_dtype(*file), wire);
  }
  EXPECT_EQ(safetensors_dtype(v1::DTYPE_BFLOAT16), DType::kBF16);
  EXPECT_EQ(safetensors_dtype(v1::DTYPE_BOOL), DType::kBool);
  EXPECT_FALSE(safetensors_dtype(static_cast<v1::DType>(99)).has_value());
  for (DType d : {DType::kF8E4M3, DType::kF8E5M2, DType::kI16, DType::kI8}) {
    EXPECT_EQ(wire_dtype(d), v1::DTYPE_UNSPECIFIED) << dtype_name(d);
  }
}

TEST(TensorFile, EveryWireDtypeRoundTripsByteForByte) {
  TempDir dir;
  const std::vector<FileTensor> tensors = {
      {"f32", DType::kF32, {2, 3}, pattern(24)},  {"f16", DType::kF16, {5}, pattern(10)},
      {"bf16", DType::kBF16, {1, 4}, pattern(8)}, {"f64", DType::kF64, {}, pattern(8)},
      {"i64", DType::kI64, {2}, pattern(16)},     {"i32", DType::kI32, {3, 1}, pattern(12)},
      {"u8", DType::kU8, {7}, pattern(7)},        {"mask", DType::kBool, {2, 2}, pattern(4, true)},
      {"empty", DType::kF32, {0, 16}, ""},
  };
  const std::string in = write_file(dir, "in.safetensors", tensors);

  absl::StatusOr<NamedTensors> read = read_tensor_file(in);
  ASSERT_THAT(read, IsOk());
  ASSERT_EQ(read->size(), static_cast<int>(tensors.size()));
  for (int i = 0; i < read->size(); ++i) {
    const v1::NamedTensor& got = read->Get(i);
    SCOPED_TRACE(got.name());
    EXPECT_EQ(got.name(), tensors[i].name);
    EXPECT_EQ(got.tensor().dtype(), wire_dtype(tensors[i].dtype));
    EXPECT_EQ(std::vector<int64_t>(got.tensor().shape().begin(), got.tensor().shape().end()),
              tensors[i].shape);
    EXPECT_EQ(got.tensor().data(), tensors[i].bytes);
  }

  const std::string out = dir.path("out.safetensors");
  ASSERT_THAT(write_tensor_file(out, *read), IsOk());
  absl::StatusOr<NamedTensors> again = read_tensor_file(out);
  ASSERT_THAT(again, IsOk());
  ASSERT_EQ(again->size(), read->size());
  for (int i = 0; i < again->size(); ++i) {
    EXPECT_EQ(again->Get(i).SerializeAsString(), read->Get(i).SerializeAsString()) << i;
  }
}

TEST(TensorFile, RefusesDtypesTheWireCannotCarry) {
  TempDir dir;
  const std::string path =
      write_file(dir, "fp8.safetensors",
                 {{"ok", DType::kF32, {1}, pattern(4)}, {"w", DType::kF8E4M3, {2}, pattern(2)}});
  EXPECT_THAT(read_tensor_file(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("fp8.safetensors"), HasSubstr("tensor \"w\" is F8_E4M3"))));
  const std::string i16 = write_file(dir, "i16.safetensors", {{"n", DType::kI16, {1}, pattern(2)}});
  EXPECT_THAT(read_tensor_file(i16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("I16")));
}

TEST(TensorFile, MissingAndMalformedFiles) {
  TempDir dir;
  EXPECT_THAT(read_tensor_file(dir.path("nope.safetensors")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope.safetensors")));
  const std::string junk = dir.write("junk.safetensors", "not a safetensors file");
  EXPECT_FALSE(read_tensor_file(junk).ok());
}

TEST(TensorFile, SingleTensorByCountOrName) {
  TempDir dir;
  const std::string one =
      write_file(dir, "one.safetensors", {{"anything", DType::kF32, {2}, pattern(8)}});
  absl::StatusOr<v1::Tensor> t = read_single_tensor(one, "caption_features");
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(t->shape(), ElementsAre(2));

  const std::string two = write_file(dir, "two.safetensors",
                                     {{"caption_features", DType::kF32, {3}, pattern(12)},
                                      {"negative_caption_features", DType::kF32, {1}, pattern(4)}});
  t = read_single_tensor(two, "negative_caption_features");
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(t->shape(), ElementsAre(1));
  EXPECT_THAT(read_single_tensor(two, "latents"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("one named \"latents\""),
                             HasSubstr("\"caption_features\", \"negative_caption_features\""))));
  const std::string none = write_file(dir, "none.safetensors", {});
  EXPECT_THAT(read_single_tensor(none, "latents"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the file holds none")));
}

TEST(TensorFile, WriteChecksEveryTensorFirst) {
  TempDir dir;
  NamedTensors tensors;
  v1::NamedTensor* good = tensors.Add();
  good->set_name("a");
  good->mutable_tensor()->set_dtype(v1::DTYPE_FLOAT32);
  good->mutable_tensor()->add_shape(2);
  good->mutable_tensor()->set_data(pattern(8));
  v1::NamedTensor* bad = tensors.Add();
  *bad = *good;
  bad->set_name("b");
  bad->mutable_tensor()->set_data(pattern(7));
  const std::string path = dir.path("out.safetensors");
  EXPECT_THAT(
      write_tensor_file(path, tensors),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("tensor \"b\""), HasSubstr("needs 8 bytes of data, got 7"))));
  EXPECT_FALSE(std::filesystem::exists(path));

  bad->mutable_tensor()->set_data(pattern(8));
  bad->set_name("a");
  EXPECT_THAT(write_tensor_file(path, tensors),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unnamed or repeated")));
  EXPECT_FALSE(std::filesystem::exists(path));

  EXPECT_THAT(write_tensor_file(dir.path("no/such/dir/x.safetensors"), NamedTensors()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("x.safetensors")));
}

}  // namespace
}  // namespace diffusiond::ctl
