// Wan's prompt cleaning against what upstream's prompt_clean made of every
// string in the UMT5 fixture (tokens.json's wan_clean), through the
// fixture's tokenizer to the ids WanPipeline gave its encoder, and against
// Python's html.unescape on the corners of HTML's character references.
#include "core/pipeline/wan/wan_prompt_clean.h"

#include <string>
#include <vector>

#include "core/text/sentencepiece_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;

std::string fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_UMT5_FIXTURE", "umt5-tiny"); }

TEST(WanPromptCleanTest, CleansEveryFixtureStringAsUpstream) {
  const nlohmann::json tokens = ::diffusiond::testing::read_json_file(fixture() + "/tokens.json");
  int cases = 0;
  for (const nlohmann::json& c : tokens.at("cases")) {
    if (!c.contains("wan_clean")) continue;
    EXPECT_EQ(clean_wan_prompt(c.at("text").get<std::string>()), c.at("wan_clean").get<std::string>())
        << c.at("name").get<std::string>();
    ++cases;
  }
  EXPECT_GE(cases, 20);
}

TEST(WanPromptCleanTest, CleanedPipelinePromptsTokenizeToUpstreamsIds) {
  absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> tokenizer =
      load_sentencepiece_tokenizer(fixture() + "/tokenizer");
  ASSERT_THAT(tokenizer, IsOk());
  const nlohmann::json pipe = ::diffusiond::testing::read_json_file(fixture() + "/tokens.json").at("pipeline");
  const std::vector<std::string> prompts = pipe.at("prompts").get<std::vector<std::string>>();
  const size_t max_length = pipe.at("max_sequence_length").get<size_t>();
  for (size_t i = 0; i < prompts.size(); ++i) {
    absl::StatusOr<std::vector<int32_t>> ids = (*tokenizer)->encode(clean_wan_prompt(prompts[i]));
    ASSERT_THAT(ids, IsOk());
    std::vector<int32_t> ours = (*tokenizer)->with_special_tokens(*ids);
    if (ours.size() > max_length) {  // content cut, the end-of-text token kept
      const int32_t eos = ours.back();
      ours.resize(max_length - 1);
      ours.push_back(eos);
    }
    std::vector<int32_t> theirs;
    const std::vector<int32_t> all = pipe.at("input_ids").at(i).get<std::vector<int32_t>>();
    const std::vector<int32_t> mask = pipe.at("attention_mask").at(i).get<std::vector<int32_t>>();
    for (size_t k = 0; k < all.size(); ++k) {
      if (mask[k] != 0) theirs.push_back(all[k]);
    }
    EXPECT_EQ(ours, theirs) << "prompt " << i;
  }
}

// Expectations from Python 3.11's html.unescape (applied twice) and
// regex.sub(r"\s+", " ", ...).strip().
TEST(WanPromptCleanTest, CharacterReferencesAreDecodedAsPythonDoes) {
  const std::pair<std::string, std::string> cases[] = {
      {"&ampfoo &lt &LTx &apos &apos;", "&foo < <x &apos '"},          // legacy names need no ';'
      {"&#x41;&#65 &#0; &#x110000;", "AA \xEF\xBF\xBD \xEF\xBF\xBD"},  // U+FFFD for 0 and past U+10FFFF
      {"a&#1;b &#x7f;c", "ab c"},                                      // controls are dropped
      {"&#128; &#x9d; &#150;", "\xE2\x82\xAC \xC2\x9D \xE2\x80\x93"},  // C1 as Windows-1252
      {"&#xD800; &#xFFFE;x", "\xEF\xBF\xBD x"},                        // a surrogate; a noncharacter dropped
      {"&# &#x &#xg; & x;", "&# &#x &#xg; & x;"},                      // no reference
      {"&notit; &eacute;", "&notit; &eacute;"},     // outside the subset: stay (Python: "\xC2\xACit; \xC3\xA9")
      {"&amp;amp; &amp;lt;", "& <"},                // twice
      {"&#99999999999999999999;", "\xEF\xBF\xBD"},  // saturates
      {"&nbsp;x&#x3000;y\xC2\xA0", "x y"},          // decoded whitespace collapses
      {"\x1c a\x1c b \x1f", "a\x1c b"},             // U+001C..1F: trimmed, not collapsed
      {"bad \xff utf8", "bad \xff utf8"},           // left for the encoder to refuse
  };
  for (const auto& [text, cleaned] : cases) EXPECT_EQ(clean_wan_prompt(text), cleaned) << text;
}

}  // namespace
}  // namespace diffusiond
