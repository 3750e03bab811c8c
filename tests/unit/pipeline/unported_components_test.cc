// A pipeline whose family names a component that no model family
// implements would be refused with UNIMPLEMENTED before anything loads
// (check_components_ported). Since the Qwen VL towers and the causal VAEs
// were ported, every built-in family's components load: a Generate of each
// goes on to describe its components, and no architecture they name is
// unported.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/pipeline/generate.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/unported_architectures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::testing::HasSubstr;

// model_index.json of a folder of `pipeline_class` with the usual components.
std::string model_index(const std::string& pipeline_class) {
  return absl::StrCat(R"({"_class_name": ")", pipeline_class, R"(", "scheduler": ["diffusers", "S"],
                  "text_encoder": ["transformers", "T"], "tokenizer": ["transformers", "K"],
                  "text_encoder_2": ["transformers", "T"], "tokenizer_2": ["transformers", "K"],
                  "transformer": ["diffusers", "D"], "vae": ["diffusers", "V"]})");
}

TEST(UnportedComponentsTest, NoBuiltInPipelineIsRefusedForAnUnportedComponent) {
  testing::TempDir dir;
  testing::FakeEngine engine;
  for (const PipelineFamily* family : pipeline_families()) {
    for (const PipelineComponent& c : family->components()) {
      EXPECT_FALSE(is_unported_architecture(c.architecture)) << family->name() << ": " << c.name;
    }
    for (const std::string& pipeline_class : family->pipeline_classes()) {
      dir.write(absl::StrCat(pipeline_class, "/model_index.json"), model_index(pipeline_class));
      GenerateRequest r;
      r.pipeline = pipeline_class;
      r.prompt = "a red fox";
      // The fake engine's inspect() is what refuses: the components are described.
      const absl::Status status = generate(engine, dir.path(), r).status();
      EXPECT_FALSE(status.ok()) << pipeline_class;
      EXPECT_THAT(std::string(status.message()), ::testing::Not(HasSubstr("cannot be loaded yet"))) << pipeline_class;
    }
  }
  EXPECT_EQ(engine.loads.load(), 0);
}

}  // namespace
}  // namespace diffusiond
