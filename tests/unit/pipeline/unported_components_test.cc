// A Generate of a family with a component no model family implements yet
// (Qwen-Image's and Krea 2's text encoders) fails with UNIMPLEMENTED naming
// that component, before anything is described or loaded, whether the
// pipeline is a folder or its components are named. Wan's pipeline, whose
// VAE is ported now, is not refused so.
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
    {"Qwen-Image", "QwenImagePipeline", "the qwen-image pipeline's component text_encoder (qwen2.5-vl)"},
    {"Krea-2", "Krea2Pipeline", "the krea2 pipeline's component text_encoder (qwen3-vl)"}};

// model_index.json of a folder of `pipeline_class` with the usual components.
std::string model_index(const char* pipeline_class) {
  return absl::StrCat(R"({"_class_name": ")", pipeline_class, R"(", "scheduler": ["diffusers", "S"],
                  "text_encoder": ["transformers", "T"], "tokenizer": ["transformers", "K"],
                  "transformer": ["diffusers", "D"], "vae": ["diffusers", "V"]})");
}

TEST(UnportedComponentsTest, AGenerateOfAPipelineFolderIsRefusedNamingTheComponent) {
  testing::TempDir dir;
  testing::FakeEngine engine;
  for (const Unported& u : kUnported) {
    dir.write(absl::StrCat(u.folder, "/model_index.json"), model_index(u.pipeline_class));
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
  ModelInfo qwen;
  qwen.model_id = "qwen-dit";
  qwen.architecture = "qwen-image";
  engine.models = {qwen};
  GenerateRequest r;
  r.components = {{"text_encoder", "qwen-vl"}, {"transformer", "qwen-dit"}, {"vae", "some-vae"}};
  r.prompt = "a red fox";
  EXPECT_THAT(generate(engine, dir.path(), r),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("the qwen-image pipeline's component text_encoder")));
  EXPECT_EQ(engine.loads.load(), 0);
}

// Every component of WanPipeline has a model family now: the Generate goes
// on to describe them (the fake engine's inspect() is what refuses here).
TEST(UnportedComponentsTest, TheWanPipelineIsNoLongerRefusedForItsVae) {
  testing::TempDir dir;
  testing::FakeEngine engine;
  dir.write("Wan2.1-T2V/model_index.json", model_index("WanPipeline"));
  GenerateRequest r;
  r.pipeline = "Wan2.1-T2V";
  r.prompt = "a red fox";
  const absl::Status status = generate(engine, dir.path(), r).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), ::testing::Not(HasSubstr("cannot be loaded yet")));
  EXPECT_EQ(engine.loads.load(), 0);
}

}  // namespace
}  // namespace diffusiond
