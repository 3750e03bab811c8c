// Hostile config.json files, per architecture: counts and dims that are
// huge, negative, zero or not integers are refused with INVALID_ARGUMENT
// naming the field, before anything proportional to them is allocated
// (both when sizing from a config alone, as plan-config does, and when
// planning a load); counts that disagree with the checkpoint's tensors are
// refused naming both files. The 10^9-layer case is measured for RSS in a
// child process.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/checkpoint/checkpoint.h"
#include "core/models/model_family.h"
#include "core/models/model_loader.h"
#include "core/util/bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using json = nlohmann::json;

// A small valid config per architecture, and the folder's weights file name.
struct Architecture {
  const char* name;
  const char* weights_file;
  json config;
};

std::vector<Architecture> architectures() {
  return {
      {"z-image", "diffusion_pytorch_model.safetensors",
       json::parse(R"({"_class_name": "ZImageTransformer2DModel", "all_patch_size": [2],
           "all_f_patch_size": [1], "in_channels": 4, "dim": 64, "n_layers": 2, "n_refiner_layers": 1,
           "n_heads": 2, "cap_feat_dim": 32, "axes_dims": [8, 12, 12], "axes_lens": [64, 32, 32]})")},
      {"flux", "diffusion_pytorch_model.safetensors",
       json::parse(R"({"_class_name": "FluxTransformer2DModel", "in_channels": 16, "num_layers": 1,
           "num_single_layers": 2, "attention_head_dim": 16, "num_attention_heads": 2,
           "joint_attention_dim": 32, "pooled_projection_dim": 16, "axes_dims_rope": [4, 6, 6]})")},
      {"qwen-image", "diffusion_pytorch_model.safetensors",
       json::parse(R"({"_class_name": "QwenImageTransformer2DModel", "in_channels": 16, "out_channels": 4,
           "num_layers": 2, "attention_head_dim": 16, "num_attention_heads": 2, "joint_attention_dim": 32,
           "axes_dims_rope": [4, 6, 6]})")},
      {"qwen3", "model.safetensors",
       json::parse(R"({"model_type": "qwen3", "architectures": ["Qwen3Model"], "vocab_size": 64,
           "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 128})")},
      {"vae", "diffusion_pytorch_model.safetensors",
       json::parse(R"({"_class_name": "AutoencoderKL", "block_out_channels": [8, 16], "layers_per_block": 1,
           "norm_num_groups": 4, "latent_channels": 4, "sample_size": 64})")},
      {"wan", "diffusion_pytorch_model.safetensors",
       json::parse(R"({"_class_name": "WanTransformer3DModel", "patch_size": [1, 2, 2], "num_attention_heads": 2,
           "attention_head_dim": 12, "in_channels": 4, "out_channels": 4, "text_dim": 16, "freq_dim": 32,
           "ffn_dim": 32, "num_layers": 2, "qk_norm": "rms_norm_across_heads", "rope_max_seq_len": 64})")},
  };
}

// Writes `arch` as a model folder: its config.json (`config`, or the valid
// one) over random weights for the valid config.
std::string write_folder(const testing::TempDir& dir, const Architecture& arch, const json& config) {
  const std::string folder = dir.path(arch.name);
  const ModelFamily* family = find_family_for_config(arch.config.dump());
  EXPECT_NE(family, nullptr) << arch.name;
  absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = family->recipe_for_config(arch.config.dump(), "valid");
  EXPECT_THAT(recipe.status(), IsOk());
  EXPECT_THAT(write_text_file(folder + "/config.json", config.dump()), IsOk());
  EXPECT_THAT(write_random_weights(folder + "/" + arch.weights_file, (*recipe)->parameter_table(), 1), IsOk());
  return folder;
}

absl::Status plan_folder(const std::string& folder) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(folder);
  if (!c.ok()) return c.status();
  return plan_model(**c, ModelLoadOptions{}).status();
}

// One bad value for one field, and what the error must say.
struct BadValue {
  const char* field;
  json value;
  const char* message;
};

std::vector<BadValue> bad_values(const std::string& arch) {
  if (arch == "z-image") {
    return {{"n_layers", 1000000000, "n_layers is 1000000000, expected at most 1024"},
            {"n_layers", -3, "n_layers is -3, expected a positive integer"},
            {"n_layers", 0, "n_layers is 0, expected a positive integer"},
            {"n_layers", 2.5, "field 'n_layers' is 2.5, expected an integer"},
            {"n_refiner_layers", -1, "n_refiner_layers is -1, expected a non-negative integer"},
            {"dim", 1e30, "field 'dim' is 1e+30, expected an integer"},
            {"dim", int64_t{1} << 40, "dim is 1099511627776, expected at most 131072"},
            {"n_heads", 0, "n_heads is 0, expected a positive integer"},
            {"cap_feat_dim", "32", "field 'cap_feat_dim' is \"32\", expected an integer"},
            {"axes_lens", json{1000000000, 32, 32}, "axes_lens[0] is 1000000000, expected at most"},
            {"norm_eps", -1.0, "norm_eps is -1"}};
  }
  if (arch == "flux") {
    return {{"num_layers", 1000000000, "num_layers is 1000000000, expected at most 1024"},
            {"num_single_layers", 1.5, "field 'num_single_layers' is 1.5, expected an integer"},
            {"num_layers", -1, "must not be negative"},
            {"num_attention_heads", 0, "num_attention_heads is 0, expected a positive integer"},
            {"attention_head_dim", int64_t{1} << 40, "attention_head_dim is 1099511627776, expected at most 1024"},
            {"joint_attention_dim", 1e300, "field 'joint_attention_dim' is 1e+300, expected an integer"},
            {"in_channels", -64, "in_channels is -64, expected a positive integer"}};
  }
  if (arch == "qwen-image") {
    return {{"num_layers", 1000000000, "num_layers is 1000000000, expected at most 1024"},
            {"num_layers", 0, "num_layers is 0, expected a positive integer"},
            {"attention_head_dim", int64_t{1} << 40, "attention_head_dim is 1099511627776, expected at most 1024"},
            {"joint_attention_dim", 1e300, "field 'joint_attention_dim' is 1e+300, expected an integer"},
            {"in_channels", -64, "in_channels is -64, expected a positive integer"},
            {"axes_dims_rope", json{4, 6, 8}, "axes_dims_rope [4, 6, 8] must be positive, even and sum"},
            {"use_additional_t_cond", true, "\"use_additional_t_cond\": true is not supported"}};
  }
  if (arch == "qwen3") {
    return {{"num_hidden_layers", 1000000000, "num_hidden_layers is 1000000000, expected at most 1024"},
            {"num_hidden_layers", 0, "num_hidden_layers is 0, expected a positive integer"},
            {"vocab_size", int64_t{1} << 40, "vocab_size is 1099511627776, expected at most"},
            {"hidden_size", -32, "hidden_size is -32, expected a positive integer"},
            {"intermediate_size", 6.4e1, "field 'intermediate_size' is 64.0, expected an integer"},
            {"max_position_embeddings", int64_t{1} << 40, "max_position_embeddings is 1099511627776"}};
  }
  if (arch == "wan") {
    return {{"num_layers", 1000000000, "num_layers is 1000000000, expected at most 1024"},
            {"num_layers", 0, "num_layers is 0, expected a positive integer"},
            {"num_layers", 2.5, "field 'num_layers' is 2.5, expected an integer"},
            {"attention_head_dim", int64_t{1} << 40, "attention_head_dim is 1099511627776, expected at most 1024"},
            {"ffn_dim", -1, "ffn_dim is -1, expected a positive integer"},
            {"text_dim", "16", "field 'text_dim' is \"16\", expected an integer"},
            {"rope_max_seq_len", int64_t{1} << 40, "rope_max_seq_len is 1099511627776, expected at most"},
            {"patch_size", json{1, 2}, "expected a list of 3 integers"},
            {"image_dim", 1280, "image_dim is 1280"},
            {"eps", -1.0, "eps is -1"}};
  }
  return {{"layers_per_block", 1000000000, "layers_per_block is 1000000000, expected at most 1024"},
          {"layers_per_block", 0, "layers_per_block is 0, expected a positive integer"},
          {"block_out_channels", json{8, 1000000000}, "block_out_channels entry 1000000000, expected at most"},
          {"block_out_channels", json{8, -16}, "block_out_channels [8, -16]"},
          {"latent_channels", 2.5, "field 'latent_channels' is 2.5, expected an integer"},
          {"sample_size", int64_t{1} << 40, "sample_size is 1099511627776, expected at most"}};
}

class HostileConfig : public ::testing::TestWithParam<Architecture> {};

TEST_P(HostileConfig, AbsurdFieldsAreRefusedWhenSizingFromTheConfigAlone) {
  const Architecture& arch = GetParam();
  const ModelFamily* family = find_family_for_config(arch.config.dump());
  ASSERT_NE(family, nullptr);
  ASSERT_THAT(family->recipe_for_config(arch.config.dump(), "c.json").status(), IsOk());
  for (const BadValue& bad : bad_values(arch.name)) {
    json config = arch.config;
    config[bad.field] = bad.value;
    const absl::Time start = absl::Now();
    EXPECT_THAT(family->recipe_for_config(config.dump(), "c.json").status(),
                StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("c.json"), HasSubstr(bad.message))))
        << bad.field << " = " << bad.value.dump();
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  }
}

TEST_P(HostileConfig, AbsurdFieldsNextToRealWeightsAreRefusedBeforePlanning) {
  const Architecture& arch = GetParam();
  testing::TempDir dir;
  ASSERT_THAT(plan_folder(write_folder(dir, arch, arch.config)), IsOk());
  for (const BadValue& bad : bad_values(arch.name)) {
    json config = arch.config;
    config[bad.field] = bad.value;
    const std::string folder = write_folder(dir, arch, config);
    const absl::Time start = absl::Now();
    EXPECT_THAT(plan_folder(folder), StatusIs(absl::StatusCode::kInvalidArgument,
                                              AllOf(HasSubstr("config.json"), HasSubstr(bad.message))))
        << bad.field << " = " << bad.value.dump();
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, HostileConfig, ::testing::ValuesIn(architectures()),
                         [](const ::testing::TestParamInfo<Architecture>& info) {
                           const std::string name = info.param.name;
                           return name == "z-image"      ? std::string("ZImage")
                                  : name == "qwen-image" ? std::string("QwenImage")
                                                         : name;
                         });

// A count the config declares that the weights do not hold.
struct Disagreement {
  const char* arch;
  const char* field;
  json value;
  const char* message;
};

TEST(HostileConfig, CountsThatDisagreeWithTheWeightsAreRefusedNamingBoth) {
  const std::vector<Disagreement> cases = {
      {"z-image", "n_layers", 3, "n_layers is 3, but "},
      {"z-image", "n_refiner_layers", 0, "n_refiner_layers is 0, but "},
      {"flux", "num_single_layers", 7, "num_single_layers is 7, but "},
      {"qwen-image", "num_layers", 3, "num_layers is 3, but "},
      {"qwen3", "num_hidden_layers", 1, "num_hidden_layers is 1, but "},
      {"vae", "layers_per_block", 2, "layers_per_block is 2, but "},
      {"vae", "block_out_channels", json{8, 16, 16}, "block_out_channels (length) is 3, but "},
      {"wan", "num_layers", 3, "num_layers is 3, but "},
  };
  for (const Disagreement& d : cases) {
    for (const Architecture& arch : architectures()) {
      if (arch.name != std::string(d.arch)) continue;
      testing::TempDir dir;
      json config = arch.config;
      config[d.field] = d.value;
      const std::string folder = write_folder(dir, arch, config);
      EXPECT_THAT(plan_folder(folder),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           AllOf(HasSubstr(folder + "/config.json: "), HasSubstr(d.message),
                                 HasSubstr(absl::StrCat(" holds ")), HasSubstr("disagree"))))
          << d.arch << " " << d.field;
    }
  }
}

// A config_path the caller gives is used or refused, never replaced: one
// without a class, or naming another architecture, is refused naming the
// file; Z-Image and FLUX single files otherwise loaded OK with a config
// inferred from their shapes. The right config loads.
TEST(HostileConfig, AGivenConfigIsUsedOrRefusedNeverIgnored) {
  testing::TempDir dir;
  const std::vector<Architecture> archs = architectures();
  for (size_t i = 0; i < archs.size(); ++i) {
    const Architecture& arch = archs[i];
    const std::string weights = write_folder(dir, arch, arch.config) + "/" + arch.weights_file;
    const auto plan_with = [&](const json& config, const std::string& name) {
      const std::string path = dir.path(absl::StrCat(arch.name, "-", name, ".json"));
      EXPECT_THAT(write_text_file(path, config.dump()), IsOk());
      OpenOptions open;
      open.config_path = path;
      absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(weights, open);
      return c.ok() ? plan_model(**c, ModelLoadOptions{}).status() : c.status();
    };
    EXPECT_THAT(plan_with(arch.config, "same"), IsOk()) << arch.name;
    json classless = arch.config;
    classless.erase("_class_name");
    classless.erase("architectures");
    classless["rope_theta"] = 500;
    const absl::Status no_class = plan_with(classless, "classless");
    EXPECT_FALSE(no_class.ok()) << arch.name;
    const Architecture& other = archs[(i + 1) % archs.size()];
    const absl::Status wrong = plan_with(other.config, "other");
    EXPECT_FALSE(wrong.ok()) << arch.name << " with " << other.name << "'s config";
    if (std::string(arch.name) == "z-image" || std::string(arch.name) == "flux") {
      EXPECT_THAT(no_class, StatusIs(absl::StatusCode::kInvalidArgument,
                                     AllOf(HasSubstr(arch.name), HasSubstr("-classless.json: names no model class"))));
      EXPECT_THAT(wrong, StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("-other.json: names class"), HasSubstr(other.name))));
    }
  }
}

TEST(HostileConfig, AHugeBlockIndexInASingleFileIsRefusedWhenInferring) {
  testing::TempDir dir;
  const std::string path = dir.path("z.safetensors");
  // dim 256: upstream's head_dim 128 is assumed without a q-norm.
  testing::write_safetensors(path, {testing::filled_tensor("x_embedder.weight", DType::kF32, {256, 16}),
                                    testing::filled_tensor("cap_embedder.1.weight", DType::kF32, {256, 32}),
                                    testing::filled_tensor("cap_pad_token", DType::kF32, {1, 256}),
                                    testing::filled_tensor("x_pad_token", DType::kF32, {1, 256}),
                                    testing::filled_tensor("layers.999999999.attention_norm1.weight",
                                                           DType::kF32, {256})});
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(path);
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_THAT(plan_model(**c, ModelLoadOptions{}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n_layers is 1000000000, expected at most 1024")));
}

// The reported case: a billion declared layers next to real weights. The
// plan is refused while the process stays near its starting size.
TEST(HostileConfig, ABillionLayersIsRefusedInSmallMemory) {
  testing::TempDir dir;
  Architecture arch = architectures()[0];
  json config = arch.config;
  config["n_layers"] = 1000000000;
  const std::string folder = write_folder(dir, arch, config);
  const testing::CommandOutput out = testing::run_command(absl::StrCat(HOSTILE_CONFIG_RSS_CHILD, " '", folder, "'"));
  ASSERT_EQ(out.exit_status, 0);
  int64_t peak = -1;
  int code = -1;
  for (const std::string& line : out.lines) {
    if (line.rfind("status_code=", 0) == 0) { ASSERT_TRUE(absl::SimpleAtoi(line.substr(12), &code)); }
    if (line.rfind("peak_rss_delta_bytes=", 0) == 0) { ASSERT_TRUE(absl::SimpleAtoi(line.substr(21), &peak)); }
  }
  std::printf("n_layers=1e9: status %d, peak RSS delta %s\n", code, format_bytes(peak).c_str());
  EXPECT_EQ(code, static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_GE(peak, 0);
  EXPECT_LT(peak, 16 * kMiB);
}

}  // namespace
}  // namespace diffusiond
