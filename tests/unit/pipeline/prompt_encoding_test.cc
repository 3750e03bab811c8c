// EncodePrompt over a fake engine: with `pipeline`, each family's own
// request of its encoder (template, token limit, padding, hidden layer) and
// its own conditioning from the output; without it, the one family of the
// encoder's architecture, a refusal naming the candidates when several
// families share it, and FAILED_PRECONDITION when none has it. Every
// refusal comes before the encoder is asked.
#include "core/pipeline/prompt_encoding.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/pipeline/flux/flux_pipeline.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/qwen_image/qwen_image_prompt.h"
#include "core/pipeline/z_image/z_image_prompt.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// `rows` x `width` hidden states (each row's values its index), the first
// `real` of them tokens and the rest padding; `taps` > 0 stacks that many
// layers per row ([rows, taps, width]).
EncodedText encoded_text(int64_t rows, int64_t real, int64_t width = 8, int64_t taps = 0) {
  EncodedText e;
  torch::Tensor index = torch::arange(rows, torch::kFloat32);
  e.hidden_states = taps > 0 ? index.view({rows, 1, 1}).expand({rows, taps, width}).contiguous()
                             : index.view({rows, 1}).expand({rows, width}).contiguous();
  e.attention_mask = torch::arange(rows) < real;
  e.tokens = real;
  return e;
}

// Rows [first, first + count) of what encoded_text() gave.
torch::Tensor rows_of(const EncodedText& e, int64_t first, int64_t count) {
  return e.hidden_states.narrow(0, first, count);
}

// A family of this test alone, for choosing among families: its one text
// encoder (or two) of `architecture` asks for "<name>: <prompt>".
class TestFamily final : public PipelineFamily {
 public:
  TestFamily(std::string name, std::string architecture, int encoders)
      : name_(std::move(name)), architecture_(std::move(architecture)), encoders_(encoders) {}
  absl::string_view name() const override { return name_; }
  std::vector<std::string> pipeline_classes() const override { return {name_ + "Pipeline"}; }
  std::vector<PipelineComponent> components() const override {
    std::vector<PipelineComponent> c = {{"text_encoder", ModelRole::kTextEncoder, architecture_}};
    if (encoders_ == 2) c.push_back({"text_encoder_2", ModelRole::kTextEncoder, architecture_});
    c.push_back({"transformer", ModelRole::kDenoiser, name_ + "-dit"});
    return c;
  }
  PipelineDefaults defaults(const ModelInfo&) const override { return {}; }
  TextEncoding text_encoding(absl::string_view, const std::string& prompt) const override {
    TextEncoding e;
    e.text = name_ + ": " + prompt;
    return e;
  }
  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view, const EncodedText& encoded) const override {
    Conditioning c;
    c.tensors[name_] = encoded.hidden_states;
    return c;
  }

 private:
  const std::string name_, architecture_;
  const int encoders_;
};

// Registers the test's families once: "shared-a" and "shared-b" share the
// encoder architecture "shared-encoder"; "twin" has two of "twin-encoder".
void register_test_families() {
  static const bool registered = [] {
    for (const PipelineFamily* f : {static_cast<const PipelineFamily*>(new TestFamily("shared-a", "shared-encoder", 1)),
                                    static_cast<const PipelineFamily*>(new TestFamily("shared-b", "shared-encoder", 1)),
                                    static_cast<const PipelineFamily*>(new TestFamily("twin", "twin-encoder", 2))}) {
      EXPECT_THAT(register_pipeline_family(f), IsOk());
    }
    return true;
  }();
  (void)registered;
}

class PromptEncodingTest : public ::testing::Test {
 protected:
  void SetUp() override { register_test_families(); }

  // Makes "te" a loaded text encoder of `architecture` that encodes as
  // `encoded`.
  void serve(const std::string& architecture, const EncodedText& encoded) {
    ModelInfo te;
    te.model_id = "te";
    te.architecture = architecture;
    engine_.models = {te};
    engine_.encode_result = encoded;
  }

  absl::StatusOr<EncodedPrompt> encode(const std::string& pipeline, const std::string& prompt = "a red fox") {
    PromptRequest r;
    r.text_encoder = "te";
    r.prompt = prompt;
    r.pipeline = pipeline;
    return encode_prompt(engine_, dir_.path(), r, {});
  }

  const TextEncoding& asked() const { return engine_.encode_request; }

  testing::TempDir dir_;
  testing::FakeEngine engine_;
};

TEST_F(PromptEncodingTest, ZImageAsksForTheTemplatedPromptsSecondToLastLayerAndKeepsItsTokens) {
  const EncodedText out = encoded_text(12, 7);
  serve("qwen3", out);
  absl::StatusOr<EncodedPrompt> e = encode("z-image");
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(asked().text, render_z_image_prompt("a red fox"));
  EXPECT_EQ(asked().max_tokens, 512);
  EXPECT_FALSE(asked().pad_to_max_tokens);  // causal: the padding changes no real row
  EXPECT_FALSE(asked().attend_to_padding);
  EXPECT_EQ(asked().hidden_layer, -2);
  ASSERT_EQ(e->conditioning.tensors.size(), 1u);
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("cap_feats"), rows_of(out, 0, 7)));
  EXPECT_TRUE(e->conditioning.scalars.empty());
  EXPECT_EQ(e->tokens, 7);
}

TEST_F(PromptEncodingTest, FluxAsksClipFor77PaddedTokensAndT5For512AttendingThePadding) {
  EncodedText clip = encoded_text(77, 5);
  clip.pooled = torch::ones({8});
  serve("clip-text", clip);
  absl::StatusOr<EncodedPrompt> e = encode("flux");
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(asked().text, "a red fox");
  EXPECT_EQ(asked().max_tokens, kFluxClipMaxTokens);
  EXPECT_TRUE(asked().pad_to_max_tokens);
  EXPECT_TRUE(asked().attend_to_padding);
  ASSERT_EQ(e->conditioning.tensors.size(), 1u);
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("pooled_projections"), clip.pooled));

  const EncodedText t5 = encoded_text(512, 6);
  serve("t5", t5);
  e = encode("flux");
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(asked().max_tokens, kFluxT5MaxTokens);
  EXPECT_TRUE(asked().attend_to_padding);
  // Every row, the padding's included: FLUX attends to it.
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("encoder_hidden_states"), t5.hidden_states));

  serve("clip-text", encoded_text(77, 5));  // no pooled output
  EXPECT_THAT(encode("flux"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must give a pooled output")));
}

TEST_F(PromptEncodingTest, QwenImageDropsTheTemplatesPrefixAndKeeps512Rows) {
  const EncodedText out = encoded_text(40, 40);
  serve("qwen2.5-vl", out);
  absl::StatusOr<EncodedPrompt> e = encode("qwen-image");
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(asked().text, absl::StrCat(kQwenImagePromptPrefix, "a red fox", kQwenImagePromptSuffix));
  EXPECT_EQ(asked().max_tokens, 34 + 512);
  EXPECT_FALSE(asked().pad_to_max_tokens);
  EXPECT_EQ(asked().hidden_layer, -1);
  ASSERT_EQ(e->conditioning.tensors.size(), 1u) << "no mask: every row kept is a token's";
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("encoder_hidden_states"), rows_of(out, 34, 6)));

  const EncodedText long_prompt = encoded_text(600, 600);
  serve("qwen2.5-vl", long_prompt);
  e = encode("qwen-image");
  ASSERT_THAT(e, IsOk());
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("encoder_hidden_states"), rows_of(long_prompt, 34, 512)));

  // Padding (were an encoder to pad) is dropped before the prefix is.
  const EncodedText padded = encoded_text(50, 40);
  serve("qwen2.5-vl", padded);
  e = encode("qwen-image");
  ASSERT_THAT(e, IsOk());
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("encoder_hidden_states"), rows_of(padded, 34, 6)));

  serve("qwen2.5-vl", encoded_text(34, 34));
  EXPECT_THAT(encode("qwen-image"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Qwen-Image's text encoder gave 34 token rows, no more than the template's 34")));
}

TEST_F(PromptEncodingTest, WanCleansThePromptAndPadsItsRowsTo512) {
  const EncodedText out = encoded_text(9, 9);
  serve("umt5", out);
  absl::StatusOr<EncodedPrompt> e = encode("wan", "  A cat &amp; a dog\n\n playing  ");
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(asked().text, "A cat & a dog playing");
  EXPECT_EQ(asked().max_tokens, 512);
  EXPECT_FALSE(asked().pad_to_max_tokens);
  EXPECT_FALSE(asked().attend_to_padding);
  EXPECT_EQ(asked().hidden_layer, -1);
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("encoder_hidden_states"), out.hidden_states));
  // The length the transformer zero-pads the rows to goes with them.
  EXPECT_EQ(e->conditioning.scalars, (std::map<std::string, double>{{"max_sequence_length", 512}}));

  const EncodedText padded = encoded_text(512, 9);
  serve("umt5", padded);
  e = encode("wan");
  ASSERT_THAT(e, IsOk());
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("encoder_hidden_states"), rows_of(padded, 0, 9)));
}

TEST_F(PromptEncodingTest, Krea2AsksForTheQwenImageTemplateAndTakesTheStackOfTaps) {
  const EncodedText out = encoded_text(40, 40, 8, /*taps=*/3);
  serve("qwen3-vl", out);
  absl::StatusOr<EncodedPrompt> e = encode("krea2");
  ASSERT_THAT(e, IsOk());
  // The prefixed prompt, cut alone before the suffix (upstream's
  // max_sequence_length + 34 - 5), which is never cut.
  EXPECT_EQ(asked().text, absl::StrCat(kQwenImagePromptPrefix, "a red fox"));
  EXPECT_EQ(asked().suffix, kQwenImagePromptSuffix);
  EXPECT_EQ(asked().max_tokens, 512 + 34 - 5);
  EXPECT_FALSE(asked().pad_to_max_tokens);
  EXPECT_EQ(asked().hidden_layers, (std::vector<int64_t>{2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35}));
  ASSERT_EQ(e->conditioning.tensors.size(), 1u);
  EXPECT_EQ(e->conditioning.tensors.at("encoder_hidden_states").sizes().vec(), (std::vector<int64_t>{6, 3, 8}));
  EXPECT_TRUE(torch::equal(e->conditioning.tensors.at("encoder_hidden_states"), rows_of(out, 34, 6)));

  serve("qwen3-vl", encoded_text(40, 40));  // one layer, not the stack
  EXPECT_THAT(encode("krea2"), StatusIs(absl::StatusCode::kInvalidArgument,
                                        AllOf(HasSubstr("tapped layers [L, taps, D]"), HasSubstr("gave [40, 8]"))));
}

TEST_F(PromptEncodingTest, AKrea2FolderTapsTheLayersItsModelIndexSelects) {
  dir_.write("krea/model_index.json",
             R"({"_class_name": "Krea2Pipeline", "text_encoder_select_layers": [1, 3], "is_distilled": false})");
  serve("qwen3-vl", encoded_text(40, 40, 8, /*taps=*/2));
  ASSERT_THAT(encode("krea"), IsOk());
  EXPECT_EQ(asked().hidden_layers, (std::vector<int64_t>{1, 3}));
  // The family by its name: upstream's default taps.
  ASSERT_THAT(encode("krea2"), IsOk());
  EXPECT_EQ(asked().hidden_layers.size(), 12u);

  dir_.write("bad/model_index.json", R"({"_class_name": "Krea2Pipeline", "text_encoder_select_layers": [1.5]})");
  const int encodes = engine_.encodes;
  EXPECT_THAT(encode("bad"), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("text_encoder_select_layers is [1.5], expected a non-empty list")));
  EXPECT_EQ(engine_.encodes, encodes) << "refused before the encoder was asked";
}

TEST_F(PromptEncodingTest, WithoutAPipelineTheOneFamilyOfTheArchitectureEncodes) {
  serve("umt5", encoded_text(4, 4));
  absl::StatusOr<EncodedPrompt> e = encode("", " a  cat ");
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(asked().text, "a cat");  // Wan's cleaning
  EXPECT_EQ(e->conditioning.scalars.at("max_sequence_length"), 512);
  // The old overload, without a models directory, chooses the same way.
  absl::StatusOr<EncodedPrompt> old = encode_prompt(engine_, "te", "a cat", {});
  ASSERT_THAT(old, IsOk());
  EXPECT_EQ(old->conditioning.scalars.at("max_sequence_length"), 512);
}

TEST_F(PromptEncodingTest, AnArchitectureOfSeveralFamiliesNeedsThePipelineNamed) {
  serve("shared-encoder", encoded_text(4, 4));
  EXPECT_THAT(encode(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                   AllOf(HasSubstr("model \"te\" (shared-encoder) is a text encoder of several "
                                                   "pipeline families (shared-a, shared-b)"),
                                         HasSubstr("pass `pipeline`"))));
  EXPECT_EQ(engine_.encodes, 0) << "refused before the encoder was asked";
  for (const char* family : {"shared-a", "shared-b"}) {
    absl::StatusOr<EncodedPrompt> e = encode(family);
    ASSERT_THAT(e, IsOk()) << family;
    EXPECT_EQ(asked().text, absl::StrCat(family, ": a red fox"));
    EXPECT_EQ(e->conditioning.tensors.count(family), 1u);
  }
}

TEST_F(PromptEncodingTest, AFamilyWithTwoEncodersOfTheArchitectureIsRefusedNamingThem) {
  serve("twin-encoder", encoded_text(4, 4));
  for (const char* pipeline : {"twin", ""}) {
    EXPECT_THAT(encode(pipeline),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("the twin pipeline has several text encoders of twin-encoder (text_encoder, "
                                   "text_encoder_2)")))
        << pipeline;
  }
  EXPECT_EQ(engine_.encodes, 0);
}

TEST_F(PromptEncodingTest, AnEncoderNoFamilyOrNotThePipelinesUsesIsRefused) {
  serve("autoencoder-kl", encoded_text(4, 4));
  EXPECT_THAT(encode(""), StatusIs(absl::StatusCode::kFailedPrecondition,
                                   HasSubstr("(autoencoder-kl) is not a text encoder of any pipeline served")));
  serve("qwen3", encoded_text(4, 4));
  EXPECT_THAT(encode("flux"), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("model \"te\" (qwen3) is not a text encoder of the flux pipeline, "
                                                 "whose text encoders are text_encoder (clip-text), text_encoder_2 "
                                                 "(t5)")));
  EXPECT_EQ(engine_.encodes, 0);
}

TEST_F(PromptEncodingTest, APipelineFolderChoosesTheFamilyByItsClass) {
  dir_.write("Qwen-Image/model_index.json", R"({"_class_name": "QwenImagePipeline"})");
  serve("qwen2.5-vl", encoded_text(40, 40));
  absl::StatusOr<EncodedPrompt> e = encode("Qwen-Image");
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(asked().text, render_qwen_image_prompt("a red fox"));

  EXPECT_THAT(encode("nowhere"), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("is neither a pipeline family (z-image, flux, qwen-image, wan, "
                                                    "krea2")));
  EXPECT_THAT(encode(".."), StatusIs(absl::StatusCode::kPermissionDenied, ::testing::_));  // confined
  EXPECT_EQ(engine_.encodes, 1);
}

TEST_F(PromptEncodingTest, AnOverlongPromptIsRefusedBeforeAnything) {
  serve("umt5", encoded_text(4, 4));
  EXPECT_THAT(encode("wan", std::string(kGenerateMaxPromptBytes + 1, 'x')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 65536 bytes")));
  EXPECT_EQ(engine_.encodes, 0);
}

}  // namespace
}  // namespace diffusiond
