#include "core/checkpoint/checkpoint.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::filled_tensor;
using ::diffusiond::testing::fixtures_dir;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::write_safetensors;
using ::testing::HasSubstr;

constexpr char kConfig[] = R"({"_class_name": "Test", "dim": 4})";
constexpr char kIndex[] = R"({"metadata": {"total_size": 48},
  "weight_map": {"a.weight": "m-1.safetensors", "b.weight": "m-2.safetensors"}})";

// diffusers' _class_name first, then transformers' architectures, then a
// composite model's text_config (a language model saved on its own).
TEST(Checkpoint, ConfigClassIsReadWhereEachLibraryWritesIt) {
  EXPECT_EQ(config_class_name(R"({"_class_name": "ZImageTransformer2DModel", "architectures": ["X"]})"),
            "ZImageTransformer2DModel");
  EXPECT_EQ(config_class_name(R"({"architectures": ["Qwen3Model"]})"), "Qwen3Model");
  EXPECT_EQ(config_class_name(R"({"model_type": "qwen3_vl", "text_config": {"architectures": ["Qwen3VLModel"]}})"),
            "Qwen3VLModel");
  EXPECT_EQ(config_class_name(R"({"text_config": {"hidden_size": 8}})"), "");
  EXPECT_EQ(config_class_name(R"({"architectures": []})"), "");
  EXPECT_EQ(config_class_name("not json"), "");
}

TEST(Checkpoint, SingleFile) {
  TempDir dir;
  write_safetensors(dir.path("m.safetensors"),
                    {filled_tensor("a.weight", DType::kBF16, {2, 3}, 7)});
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir.path("m.safetensors"));
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ((*c)->layout(), CheckpointLayout::kSingleFile);
  ASSERT_EQ((*c)->tensors().size(), 1u);
  std::string data(12, '\0');
  ASSERT_THAT((*c)->read((*c)->tensors()[0], data.data()), IsOk());
  EXPECT_EQ(data, std::string(12, 7));
}

TEST(Checkpoint, DiffusersFolderWithOneWeightsFile) {
  TempDir dir;
  dir.write("config.json", kConfig);
  write_safetensors(dir.path("diffusion_pytorch_model.safetensors"),
                    {filled_tensor("a.weight", DType::kF32, {2, 3})});
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir.path());
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ((*c)->layout(), CheckpointLayout::kDiffusersFolder);
  EXPECT_THAT((*c)->config_json(), HasSubstr("_class_name"));
}

TEST(Checkpoint, ShardedDiffusersFolder) {
  TempDir dir;
  dir.write("config.json", kConfig);
  dir.write("diffusion_pytorch_model.safetensors.index.json", kIndex);
  write_safetensors(dir.path("m-1.safetensors"), {filled_tensor("a.weight", DType::kF32, {2, 3}, 1)});
  write_safetensors(dir.path("m-2.safetensors"), {filled_tensor("b.weight", DType::kF32, {2, 3}, 2)});
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir.path());
  ASSERT_THAT(c, IsOk());
  ASSERT_EQ((*c)->tensors().size(), 2u);
  EXPECT_EQ((*c)->files().size(), 2u);
  EXPECT_EQ((*c)->weight_bytes(), 48);
  const TensorRecord* b = (*c)->find("b.weight");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->file_index, 1);
  std::string data(24, '\0');
  ASSERT_THAT((*c)->read(*b, data.data()), IsOk());
  EXPECT_EQ(data, std::string(24, 2));
}

// transformers names the weights model.safetensors and may keep other
// .safetensors files beside them.
TEST(Checkpoint, TransformersFolderPrefersModelSafetensors) {
  TempDir dir;
  dir.write("config.json", kConfig);
  write_safetensors(dir.path("model.safetensors"), {filled_tensor("a.weight", DType::kF32, {2, 3})});
  write_safetensors(dir.path("extra.safetensors"), {filled_tensor("x", DType::kF32, {1})});
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir.path());
  ASSERT_THAT(c, IsOk());
  ASSERT_EQ((*c)->files().size(), 1u);
  EXPECT_EQ((*c)->files()[0], dir.path("model.safetensors"));
  EXPECT_NE((*c)->find("a.weight"), nullptr);
}

TEST(Checkpoint, ShardedTransformersFolder) {
  TempDir dir;
  dir.write("config.json", kConfig);
  dir.write("model.safetensors.index.json", kIndex);
  dir.write("other.safetensors.index.json", R"({"weight_map": {"z": "m-3.safetensors"}})");
  write_safetensors(dir.path("m-1.safetensors"), {filled_tensor("a.weight", DType::kF32, {2, 3}, 1)});
  write_safetensors(dir.path("m-2.safetensors"), {filled_tensor("b.weight", DType::kF32, {2, 3}, 2)});
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir.path());
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ((*c)->layout(), CheckpointLayout::kDiffusersFolder);
  ASSERT_EQ((*c)->tensors().size(), 2u);
}

TEST(Checkpoint, FolderWithSeveralWeightFilesAndNoKnownNameIsRejected) {
  TempDir dir;
  dir.write("config.json", kConfig);
  write_safetensors(dir.path("a.safetensors"), {filled_tensor("a.weight", DType::kF32, {2})});
  write_safetensors(dir.path("b.safetensors"), {filled_tensor("b.weight", DType::kF32, {2})});
  EXPECT_THAT(Checkpoint::open(dir.path()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("2 .safetensors files and no shard index; expected "
                                 "diffusion_pytorch_model.safetensors or model.safetensors")));
}

TEST(Checkpoint, IndexNamingAMissingShardIsNotFound) {
  TempDir dir;
  dir.write("config.json", kConfig);
  dir.write("diffusion_pytorch_model.safetensors.index.json", kIndex);
  write_safetensors(dir.path("m-1.safetensors"), {filled_tensor("a.weight", DType::kF32, {2, 3})});
  EXPECT_THAT(Checkpoint::open(dir.path()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("names a missing shard")));
}

TEST(Checkpoint, IndexThatMisplacesATensorIsDataLoss) {
  TempDir dir;
  dir.write("config.json", kConfig);
  dir.write("diffusion_pytorch_model.safetensors.index.json", kIndex);
  write_safetensors(dir.path("m-1.safetensors"), {filled_tensor("a.weight", DType::kF32, {2, 3})});
  write_safetensors(dir.path("m-2.safetensors"), {filled_tensor("c.weight", DType::kF32, {2, 3})});
  EXPECT_THAT(Checkpoint::open(dir.path()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("places 'b.weight' in m-2")));
}

TEST(Checkpoint, ShardNamesCannotLeaveTheFolder) {
  TempDir dir;
  dir.write("config.json", kConfig);
  dir.write("diffusion_pytorch_model.safetensors.index.json",
            R"({"weight_map": {"a.weight": "../elsewhere.safetensors"}})");
  EXPECT_THAT(Checkpoint::open(dir.path()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("plain file name")));
}

TEST(Checkpoint, SameTensorInTwoShardsIsRejected) {
  TempDir dir;
  dir.write("config.json", kConfig);
  dir.write("diffusion_pytorch_model.safetensors.index.json", kIndex);
  write_safetensors(dir.path("m-1.safetensors"), {filled_tensor("a.weight", DType::kF32, {2, 3})});
  write_safetensors(dir.path("m-2.safetensors"), {filled_tensor("a.weight", DType::kF32, {2, 3}),
                                                  filled_tensor("b.weight", DType::kF32, {2, 3})});
  EXPECT_THAT(Checkpoint::open(dir.path()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("also appears in")));
}

TEST(Checkpoint, FolderWithoutConfigIsNotADiffusersFolder) {
  TempDir dir;
  write_safetensors(dir.path("m.safetensors"), {filled_tensor("a.weight", DType::kF32, {2})});
  EXPECT_THAT(Checkpoint::open(dir.path()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no config.json")));
}

TEST(Checkpoint, MissingPathIsNotFound) {
  EXPECT_THAT(Checkpoint::open("/nonexistent/model.safetensors"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/model.safetensors")));
}

TEST(Checkpoint, ScaleWithoutItsWeightIsRejected) {
  TempDir dir;
  write_safetensors(dir.path("m.safetensors"),
                    {filled_tensor("a.weight", DType::kBF16, {2}),
                     filled_tensor("a.scale_weight", DType::kF32, {})});
  EXPECT_THAT(Checkpoint::open(dir.path("m.safetensors")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no FP8 weight 'a.weight'")));
}

TEST(Checkpoint, WeightScaleSpellingIsRecognised) {
  TempDir dir;
  write_safetensors(dir.path("m.safetensors"),
                    {filled_tensor("a.weight", DType::kF8E4M3, {2, 2}),
                     filled_tensor("a.weight_scale", DType::kF32, {}),
                     filled_tensor("a.input_scale", DType::kF32, {})});
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir.path("m.safetensors"));
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ((*c)->layout(), CheckpointLayout::kScaledFp8File);
  ASSERT_EQ((*c)->fp8_scales().count("a.weight"), 1u);
  EXPECT_EQ((*c)->fp8_scales().at("a.weight").scale_tensor, "a.weight_scale");
  EXPECT_EQ((*c)->fp8_scales().at("a.weight").input_scale_tensor, "a.input_scale");
  EXPECT_EQ((*c)->tensors().size(), 1u);
}

TEST(CheckpointFixture, ScaledFp8SingleFile) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> c =
      Checkpoint::open(fixtures_dir() + "/zimage-tiny/single_file_scaled_fp8.safetensors");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ((*c)->layout(), CheckpointLayout::kScaledFp8File);
  EXPECT_EQ((*c)->fp8_scales().size(), 37u);  // the fixture README's list
  EXPECT_EQ((*c)->fp8_scales().at("layers.0.attention.qkv.weight").scale_tensor,
            "layers.0.attention.qkv.scale_weight");
  for (const TensorRecord& t : (*c)->tensors()) {
    EXPECT_THAT(t.name, ::testing::Not(HasSubstr("scale")));
  }
  EXPECT_NE((*c)->find("scaled_fp8"), nullptr);
}

TEST(CheckpointFixture, PlainSingleFileAndDiffusersWeights) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> single =
      Checkpoint::open(fixtures_dir() + "/zimage-tiny/single_file.safetensors");
  ASSERT_THAT(single, IsOk());
  EXPECT_EQ((*single)->layout(), CheckpointLayout::kSingleFile);
  absl::StatusOr<std::unique_ptr<Checkpoint>> diffusers = Checkpoint::open(
      fixtures_dir() + "/zimage-tiny/transformer/diffusion_pytorch_model.safetensors");
  ASSERT_THAT(diffusers, IsOk());
  EXPECT_EQ((*diffusers)->weight_bytes(), (*single)->weight_bytes());
}

}  // namespace
}  // namespace diffusiond
