// Qwen-Image's template (which Krea 2 shares) against upstream's own
// tokenizer runs in the Qwen2.5-VL and Qwen3-VL fixtures: the prefix and
// suffix are upstream's, the prefix is the 34 tokens the pipelines drop,
// and a templated prompt tokenizes to the ids upstream gave its encoder
// (the padding left out, which no kept row depends on). The random
// pipelines' tokenizer (tools/random_models) counts the template as the
// real one does.
#include "core/pipeline/qwen_image/qwen_image_prompt.h"

#include <string>
#include <vector>

#include "core/text/tokenizer_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/random_models/qwen_tokenizer_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

struct Fixture {
  const char* env_var;
  const char* name;
  // Krea 2 truncates the prompt alone and keeps the suffix; unpadded ids
  // match upstream's only where it padded.
  bool suffix_kept_when_truncated;
};
constexpr Fixture kFixtures[] = {{"DIFFUSIOND_QWEN25VL_FIXTURE", "qwen25vl-tiny", false},
                                 {"DIFFUSIOND_QWEN3VL_FIXTURE", "qwen3vl-tiny", true}};

std::vector<int32_t> ints(const nlohmann::json& list) { return list.get<std::vector<int32_t>>(); }

TEST(QwenImagePromptTest, TheTemplateTokenizesAsUpstreamsAndItsPrefixIsTheDroppedTokens) {
  for (const Fixture& f : kFixtures) {
    const std::string dir = ::diffusiond::testing::fixture_folder(f.env_var, f.name);
    absl::StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = load_tokenizer(dir + "/tokenizer");
    ASSERT_THAT(tokenizer, IsOk()) << f.name;
    const nlohmann::json tokens = ::diffusiond::testing::read_json_file(dir + "/tokens.json");
    const nlohmann::json& tmpl = tokens.at("template");
    EXPECT_EQ(tmpl.at("prefix").get<std::string>(), kQwenImagePromptPrefix) << f.name;
    EXPECT_EQ(tmpl.at("suffix").get<std::string>(), kQwenImagePromptSuffix) << f.name;
    absl::StatusOr<std::vector<int32_t>> prefix = (*tokenizer)->encode(kQwenImagePromptPrefix);
    ASSERT_THAT(prefix, IsOk());
    EXPECT_EQ(*prefix, ints(tmpl.at("prefix_ids"))) << f.name;
    EXPECT_EQ(static_cast<int64_t>(prefix->size()), kQwenImagePromptDropTokens) << f.name;

    int compared = 0;
    for (const auto& [name, call] : tokens.at("pipeline").items()) {
      const std::vector<std::string> prompts = call.at("prompts").get<std::vector<std::string>>();
      for (size_t i = 0; i < prompts.size(); ++i) {
        const std::vector<int32_t> ids = ints(call.at("input_ids").at(i));
        const std::vector<int32_t> mask = ints(call.at("attention_mask").at(i));
        std::vector<int32_t> real;
        for (size_t k = 0; k < ids.size(); ++k) {
          if (mask[k] != 0) real.push_back(ids[k]);
        }
        const bool padded = real.size() < ids.size();
        if (!padded && f.suffix_kept_when_truncated) continue;  // may be truncated: the suffix differs by design
        absl::StatusOr<std::vector<int32_t>> ours = (*tokenizer)->encode(render_qwen_image_prompt(prompts[i]));
        ASSERT_THAT(ours, IsOk());
        // Unpadded upstream ids may be cut at the tokenizer's limit: ours
        // start with them.
        ASSERT_GE(ours->size(), real.size()) << f.name << " " << name << " " << i;
        if (padded) {
          EXPECT_EQ(ours->size(), real.size()) << f.name << " " << name << " " << i;
        }
        EXPECT_EQ(std::vector<int32_t>(ours->begin(), ours->begin() + real.size()), real)
            << f.name << " " << name << " " << i;
        ++compared;
      }
    }
    EXPECT_GE(compared, 4) << f.name;
  }
}

TEST(QwenImagePromptTest, TheRandomPipelinesTokenizerMakesTheTemplatesTokenCounts) {
  testing::TempDir dir;
  ASSERT_THAT(write_qwen_tokenizer(dir.path("tokenizer"), qwen_image_template_tokenizer(), 512), IsOk());
  absl::StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = load_tokenizer(dir.path("tokenizer"));
  ASSERT_THAT(tokenizer, IsOk());
  absl::StatusOr<std::vector<int32_t>> prefix = (*tokenizer)->encode(kQwenImagePromptPrefix);
  absl::StatusOr<std::vector<int32_t>> suffix = (*tokenizer)->encode(kQwenImagePromptSuffix);
  ASSERT_THAT(prefix, IsOk());
  ASSERT_THAT(suffix, IsOk());
  EXPECT_EQ(static_cast<int64_t>(prefix->size()), kQwenImagePromptDropTokens);
  EXPECT_EQ(suffix->size(), 5u);
  EXPECT_THAT(write_qwen_tokenizer(dir.path("small"), qwen_image_template_tokenizer(), 300),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than the text encoder's vocab_size 300")));
}

TEST(QwenImagePromptTest, RowsOfAnEncoderOutputOfTheWrongShapeAreRefused) {
  EncodedText e;
  e.hidden_states = torch::zeros({40, 8});
  e.attention_mask = torch::ones({39}, torch::kBool);
  EXPECT_THAT(qwen_image_prompt_rows(e, 512, "Qwen-Image"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got [40, 8] and [39]")));
  e.attention_mask = torch::Tensor();
  absl::StatusOr<torch::Tensor> rows = qwen_image_prompt_rows(e, 4, "Qwen-Image");  // no mask: every row a token's
  ASSERT_THAT(rows, IsOk());
  EXPECT_EQ(rows->sizes().vec(), (std::vector<int64_t>{4, 8}));
}

}  // namespace
}  // namespace diffusiond
