// A Generate of a family with a component no model family implements yet
// (Qwen-Image's VAE, which Krea 2 shares, and Wan's VAE) fails with
// UNIMPLEMENTED naming that component, before anything is described or
// loaded, whether the pipeline is a folder or its components are named.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/pipeline/generate.h"
#include "core/pipeline/unported_architectures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

struct Unported {
  const char* folder;
  const char* pipeline_class;
  const char* refusal;  // the first component that cannot be loaded
};
constexpr Unported kUnported[] = {
    {"Qwen-Image", "QwenImagePipeline", "the qwen-image pipeline's component vae (autoencoder-kl-qwen-image)"},
    {"Wan2.1-T2V", "WanPipeline", "the wan pipeline's component vae (autoencoder-kl-wan)"},
    {"Krea-2", "Krea2Pipeline", "the krea2 pipeline's component vae (autoencoder-kl-qwen-image)"}};

TEST(UnportedComponentsTest, AGenerateOfAPipelineFolderIsRefusedNamingTheComponent) {
  testing::TempDir dir;
  testing::FakeEngine engine;
  for (const Unported& u : kUnported) {
    dir.write(absl::StrCat(u.folder, "/model_index.json"),
              absl::StrCat(R"({"_class_name": ")", u.pipeline_class, R"(", "scheduler": ["diffusers", "S"],
                  "text_encoder": ["transformers", "T"], "tokenizer": ["transformers", "K"],
                  "transformer": ["diffusers", "D"], "vae": ["diffusers", "V"]})"));
    GenerateRequest r;
    r.pipeline = u.folder;
    r.prompt = "a red fox";
    // The fake's inspect() answers UNIMPLEMENTED("inspect"): the refusal
    // must be the generate's own, before any component is described.
    EXPECT_THAT(generate(engine, dir.path(), r), StatusIs(absl::StatusCode::kUnimplemented,
                                                          AllOf(HasSubstr(u.refusal), HasSubstr("cannot be loaded yet"),
                                                                HasSubstr("nothing was loaded"))))
        << u.folder;
  }
  EXPECT_EQ(engine.loads.load(), 0);
}

TEST(UnportedComponentsTest, AGenerateNamingItsComponentsIsRefusedToo) {
  testing::TempDir dir;
  testing::FakeEngine engine;
  ModelInfo wan;
  wan.model_id = "wan-dit";
  wan.architecture = "wan";
  engine.models = {wan};
  GenerateRequest r;
  r.components = {{"text_encoder", "umt5"}, {"transformer", "wan-dit"}, {"vae", "some-vae"}};
  r.prompt = "a red fox";
  EXPECT_THAT(generate(engine, dir.path(), r),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("the wan pipeline's component vae")));
  EXPECT_EQ(engine.loads.load(), 0);
}

}  // namespace
}  // namespace diffusiond
