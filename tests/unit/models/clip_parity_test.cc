// Parity of the CLIP tokenizer and text encoder with upstream transformers'
// CLIPTokenizer (slow) and CLIPTextModel, and of the pooled prompt embeds
// with diffusers' FluxPipeline._get_clip_prompt_embeds, on the reference
// fixture ($DIFFUSIOND_CLIP_FIXTURE, default fixtures_dir()/clip-tiny;
// skipped when neither holds one): every tokens.json string's ids, tokens,
// cleaning and decode, and its padded and truncated form; every hidden
// state, last_hidden_state and pooler_output of the pipeline batch, masked
// and unmasked as present, prompts alone, Step, the pooled prompt embeds
// through TextEncoder::encode, a single-file copy in the ComfyUI and SD3
// bundle layouts, and bfloat16 compute. Every size, length and flag comes
// from the fixture's files, so another fixture of the same layout (other
// sizes, the newer eos_token_id pooling) runs unchanged.
//
// The ClipParityRandomFolder tests need no fixture: tools/random_models'
// CLIP folders load through the family and refuse bad inputs.
//
// Tolerance: 8e-6 absolute, the README's bound for a float32 port (its
// float32 noise floor, the float64 run against the float32 one, is ~2e-6).
#include <torch/types.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/models/clip/clip_family.h"
#include "core/models/clip/clip_model.h"
#include "core/models/model_loader.h"
#include "core/text/clip_text_cleaning.h"
#include "core/text/clip_tokenizer_files.h"
#include "core/text/token_batch.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"
#include "tools/random_models/clip_random.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::read_json_file;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;
using ::testing::AllOf;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr double kClipTolerance = 8e-6;

std::string clip_fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_CLIP_FIXTURE", "clip-tiny"); }

bool have_fixture() { return std::filesystem::exists(clip_fixture() + "/config.json"); }

#define SKIP_WITHOUT_FIXTURE()                           \
  if (!have_fixture())                                   \
  GTEST_SKIP() << "no CLIP fixture at " << clip_fixture() \
               << "; set DIFFUSIOND_CLIP_FIXTURE to a folder in clip-tiny's layout"

std::unique_ptr<ClipTokenizer> fixture_tokenizer() {
  absl::StatusOr<std::unique_ptr<ClipTokenizer>> t = load_clip_tokenizer(clip_fixture() + "/tokenizer");
  EXPECT_THAT(t, IsOk());
  return t.ok() ? *std::move(t) : nullptr;
}

// FluxPipeline pads and truncates to tokenizer.model_max_length.
int64_t pipeline_max_length(const ClipTokenizer& tokenizer) {
  EXPECT_GT(tokenizer.model_max_length(), 0) << "tokenizer_config.json names no model_max_length";
  return tokenizer.model_max_length();
}

std::vector<int32_t> clip_ids_of(const json& array) { return array.get<std::vector<int32_t>>(); }

// ---------------------------------------------------------------- tokenizer

TEST(ClipParityTokens, EveryStringsIdsTokensCleaningAndDecode) {
  SKIP_WITHOUT_FIXTURE();
  const std::unique_ptr<ClipTokenizer> t = fixture_tokenizer();
  ASSERT_NE(t, nullptr);
  const json tokens = read_json_file(clip_fixture() + "/tokens.json");
  ASSERT_TRUE(tokens.contains("cases"));
  // decode(skip_special_tokens=True) skips the named special tokens.
  absl::StatusOr<ClipTokenizerSpec> spec = read_clip_tokenizer_files(clip_fixture() + "/tokenizer");
  ASSERT_THAT(spec, IsOk());
  std::set<int32_t> specials;
  for (const std::string* name : {&spec->bos_token, &spec->eos_token, &spec->unk_token, &spec->bpe.pad_token}) {
    specials.insert(t->token_to_id(*name));
  }
  int checked = 0;
  for (const json& c : tokens["cases"]) {
    const std::string name = c["name"], text = c["text"];
    absl::StatusOr<std::vector<int32_t>> ids = t->encode(text);
    ASSERT_THAT(ids, IsOk()) << name;
    const std::vector<int32_t> wrapped = t->with_special_tokens(*ids);
    EXPECT_EQ(wrapped, clip_ids_of(c["ids"])) << name;
    if (c.contains("tokens")) {
      std::vector<std::string> shown;
      for (const int32_t id : wrapped) shown.push_back(t->id_to_token(id) != nullptr ? *t->id_to_token(id) : "?");
      EXPECT_EQ(shown, c["tokens"].get<std::vector<std::string>>()) << name;
    }
    if (c.contains("cleaned")) {
      absl::StatusOr<std::string> cleaned = clean_clip_text(text);
      ASSERT_THAT(cleaned, IsOk()) << name;
      EXPECT_EQ(*cleaned, c["cleaned"].get<std::string>()) << name;
    }
    if (c.contains("decode")) {
      std::vector<int32_t> kept;
      for (const int32_t id : wrapped) {
        if (specials.count(id) == 0) kept.push_back(id);
      }
      absl::StatusOr<std::string> decoded = t->decode(kept);
      ASSERT_THAT(decoded, IsOk()) << name;
      EXPECT_EQ(*decoded, c["decode"].get<std::string>()) << name;
    }
    ++checked;
  }
  std::printf("tokens.json: %d strings\n", checked);
  EXPECT_GT(checked, 0);
}

// Each case's "ids_<label><N>" / "mask_<label><N>": tokenizer(text,
// padding="max_length", max_length=N, truncation=True).
TEST(ClipParityTokens, PaddedAndTruncatedAtTheFixturesLengths) {
  SKIP_WITHOUT_FIXTURE();
  const std::unique_ptr<ClipTokenizer> t = fixture_tokenizer();
  ASSERT_NE(t, nullptr);
  const json tokens = read_json_file(clip_fixture() + "/tokens.json");
  int checked = 0, truncated = 0;
  for (const json& c : tokens["cases"]) {
    for (const auto& [key, value] : c.items()) {
      if (!absl::StartsWith(key, "ids_")) continue;
      const std::string label = key.substr(4);
      const size_t digits = label.find_last_not_of("0123456789") + 1;
      int64_t max_length = 0;
      ASSERT_TRUE(absl::SimpleAtoi(label.substr(digits), &max_length)) << key;
      TokenizeOptions options;
      options.max_length = max_length;
      options.pad_to_max_length = true;
      const std::vector<std::string> texts = {c["text"].get<std::string>()};
      absl::StatusOr<TokenBatch> batch = tokenize_batch(*t, texts, options);
      ASSERT_THAT(batch, IsOk()) << c["name"];
      EXPECT_EQ(batch->ids, clip_ids_of(value)) << c["name"] << " " << key;
      const std::string mask_key = "mask_" + label;
      if (c.contains(mask_key)) {
        const std::vector<int32_t> mask(batch->attention_mask.begin(), batch->attention_mask.end());
        EXPECT_EQ(mask, clip_ids_of(c[mask_key])) << c["name"] << " " << mask_key;
      }
      truncated += c["ids"].size() > static_cast<size_t>(max_length);
      ++checked;
    }
  }
  std::printf("padded/truncated forms: %d (%d truncated)\n", checked, truncated);
  EXPECT_GT(checked, 0);
}

TEST(ClipParityTokens, PipelineBatchAsFluxTokenizesIt) {
  SKIP_WITHOUT_FIXTURE();
  const std::unique_ptr<ClipTokenizer> t = fixture_tokenizer();
  ASSERT_NE(t, nullptr);
  const json pipeline = read_json_file(clip_fixture() + "/tokens.json")["pipeline"];
  TokenizeOptions options;
  options.max_length = pipeline_max_length(*t);
  options.pad_to_max_length = true;
  const std::vector<std::string> prompts = pipeline["prompts"].get<std::vector<std::string>>();
  absl::StatusOr<TokenBatch> batch = tokenize_batch(*t, prompts, options);
  ASSERT_THAT(batch, IsOk());
  std::vector<int32_t> expected;
  for (const json& row : pipeline["input_ids"]) {
    const std::vector<int32_t> ids = clip_ids_of(row);
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(batch->ids, expected);
  // The same ids the encoder was run on.
  TensorFile io(clip_fixture() + "/io.safetensors");
  const torch::Tensor pipe = io.get("pipe.input_ids");
  EXPECT_EQ(std::vector<int64_t>(pipe.data_ptr<int64_t>(), pipe.data_ptr<int64_t>() + pipe.numel()),
            std::vector<int64_t>(batch->ids.begin(), batch->ids.end()));
}

// ---------------------------------------------------------------- encoder

bool io_has(const std::string& name) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> io = Checkpoint::open(clip_fixture() + "/io.safetensors");
  return io.ok() && (*io)->find(name) != nullptr;
}

int count_items(const std::string& prefix) {
  int n = 0;
  while (io_has(absl::StrCat(prefix, n))) ++n;
  return n;
}

class ClipParity : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_FIXTURE();
    loaded_ = load_test_model(clip_fixture(), ModelLoadOptions());
    model_ = loaded_.get<ClipTextModel>();
    ASSERT_NE(model_, nullptr);
    io_ = std::make_unique<TensorFile>(clip_fixture() + "/io.safetensors");
  }

  ClipTextOutputs run(const torch::Tensor& ids, const torch::Tensor& mask, int64_t layer = -1) const {
    absl::StatusOr<ClipTextOutputs> out = model_->forward(ids, mask, layer);
    EXPECT_THAT(out, IsOk());
    return out.ok() ? *out : ClipTextOutputs();
  }

  testing::LoadedModel loaded_;
  const ClipTextModel* model_ = nullptr;
  std::unique_ptr<TensorFile> io_;
};

TEST_F(ClipParity, EveryHiddenStateOfThePipelineBatch) {
  const torch::Tensor ids = io_->get("pipe.input_ids");
  const int64_t layers = model_->config().num_hidden_layers;
  ASSERT_EQ(count_items("pipe.hidden_states."), layers + 1);
  for (int64_t k = 0; k <= layers; ++k) {
    const ClipTextOutputs out = run(ids, torch::Tensor(), k);
    const double diff = max_abs_diff(out.hidden_state, io_->get(absl::StrCat("pipe.hidden_states.", k)));
    std::printf("hidden_states[%lld]: max abs diff %.3g\n", static_cast<long long>(k), diff);
    EXPECT_LT(diff, kClipTolerance) << "hidden state " << k;
  }
  // Negative indices count from the end of the tuple, except -1: the final
  // norm's output.
  EXPECT_TRUE(
      torch::equal(run(ids, torch::Tensor(), -2).hidden_state, run(ids, torch::Tensor(), layers - 1).hidden_state));
  const ClipTextOutputs last = run(ids, torch::Tensor(), -1);
  EXPECT_TRUE(torch::equal(last.hidden_state, last.last_hidden_state));
  const double diff = max_abs_diff(last.last_hidden_state, io_->get("pipe.last_hidden_state"));
  std::printf("last_hidden_state: max abs diff %.3g (vs float64 %.3g)\n", diff,
              max_abs_diff(last.last_hidden_state, io_->get("pipe.last_hidden_state_f64")));
  EXPECT_LT(diff, kClipTolerance);
}

TEST_F(ClipParity, PooledAtThePositionTransformersPicks) {
  const torch::Tensor ids = io_->get("pipe.input_ids");
  const ClipTextOutputs out = run(ids, torch::Tensor());
  EXPECT_TRUE(torch::equal(out.pooled_positions, io_->get("pipe.eos_index")))
      << out.pooled_positions << " vs " << io_->get("pipe.eos_index");
  const double diff = max_abs_diff(out.pooler_output, io_->get("pipe.pooled_prompt_embeds"));
  std::printf("pooler_output (%s pooling): max abs diff %.3g (vs float64 %.3g)\n",
              model_->config().pools_at_largest_id() ? "largest-id" : "first-eos", diff,
              max_abs_diff(out.pooler_output, io_->get("pipe.pooled_f64")));
  EXPECT_LT(diff, kClipTolerance);
}

TEST_F(ClipParity, MaskedFormWhereTheFixtureHasIt) {
  if (!io_has("masked.last_hidden_state")) GTEST_SKIP() << "the fixture has no masked outputs";
  const ClipTextOutputs out = run(io_->get("pipe.input_ids"), io_->get("pipe.attention_mask"));
  const double diff = max_abs_diff(out.last_hidden_state, io_->get("masked.last_hidden_state"));
  std::printf("masked last_hidden_state: max abs diff %.3g\n", diff);
  EXPECT_LT(diff, kClipTolerance);
  if (io_has("masked.pooler_output")) {
    const double pooled = max_abs_diff(out.pooler_output, io_->get("masked.pooler_output"));
    std::printf("masked pooler_output: max abs diff %.3g\n", pooled);
    EXPECT_LT(pooled, kClipTolerance);
  }
}

TEST_F(ClipParity, PromptsAloneWithoutPadding) {
  const int items = count_items("single.input_ids.");
  ASSERT_GT(items, 0);
  for (int i = 0; i < items; ++i) {
    const torch::Tensor ids = io_->get(absl::StrCat("single.input_ids.", i)).unsqueeze(0);
    const ClipTextOutputs out = run(ids, torch::Tensor());
    const double diff = max_abs_diff(out.last_hidden_state[0], io_->get(absl::StrCat("single.last_hidden_state.", i)));
    std::printf("single.last_hidden_state.%d [%lld tokens]: max abs diff %.3g\n", i,
                static_cast<long long>(ids.size(1)), diff);
    EXPECT_LT(diff, kClipTolerance) << "prompt " << i;
  }
}

TEST_F(ClipParity, StepMatchesTheReference) {
  absl::StatusOr<NamedTensors> out = model_->step({{"input_ids", io_->get("pipe.input_ids")}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->count("last_hidden_state"), 1u);
  ASSERT_EQ(out->count("pooler_output"), 1u);
  EXPECT_LT(max_abs_diff(out->at("last_hidden_state"), io_->get("pipe.last_hidden_state")), kClipTolerance);
  EXPECT_LT(max_abs_diff(out->at("pooler_output"), io_->get("pipe.pooled_prompt_embeds")), kClipTolerance);
  EXPECT_EQ(out->count("text_embeds"), model_->config().with_projection ? 1u : 0u);
  if (io_has("masked.last_hidden_state")) {
    out =
        model_->step({{"input_ids", io_->get("pipe.input_ids")}, {"attention_mask", io_->get("pipe.attention_mask")}});
    ASSERT_THAT(out, IsOk());
    EXPECT_LT(max_abs_diff(out->at("last_hidden_state"), io_->get("masked.last_hidden_state")), kClipTolerance);
  }
}

// A FLUX pipeline folder's text_encoder/ beside its tokenizer/, encoding as
// FluxPipeline._get_clip_prompt_embeds does: padded to model_max_length,
// truncated, no attention mask, pooler_output.
TEST(ClipParityPipeline, PooledPromptEmbedsThroughEncode) {
  SKIP_WITHOUT_FIXTURE();
  TempDir dir;
  std::filesystem::create_directories(dir.path("text_encoder"));
  std::filesystem::create_symlink(clip_fixture() + "/config.json", dir.path("text_encoder/config.json"));
  std::filesystem::create_symlink(clip_fixture() + "/model.safetensors", dir.path("text_encoder/model.safetensors"));
  std::filesystem::create_directory_symlink(clip_fixture() + "/tokenizer", dir.path("tokenizer"));
  testing::LoadedModel loaded = load_test_model(dir.path("text_encoder"), ModelLoadOptions());
  const ClipTextModel* model = loaded.get<ClipTextModel>();
  ASSERT_NE(model, nullptr);
  const auto* tokenizer = dynamic_cast<const ClipTokenizer*>(model->tokenizer());
  ASSERT_NE(tokenizer, nullptr) << "the tokenizer/ beside text_encoder/ was not loaded";

  TensorFile io(clip_fixture() + "/io.safetensors");
  const torch::Tensor pooled = io.get("pipe.pooled_prompt_embeds"), last = io.get("pipe.last_hidden_state");
  const torch::Tensor mask = io.get("pipe.attention_mask");
  const json prompts = read_json_file(clip_fixture() + "/tokens.json")["pipeline"]["prompts"];
  ASSERT_EQ(static_cast<int64_t>(prompts.size()), pooled.size(0));
  for (size_t i = 0; i < prompts.size(); ++i) {
    TextEncoding request;
    request.text = prompts[i].get<std::string>();
    request.max_tokens = pipeline_max_length(*tokenizer);
    request.pad_to_max_tokens = true;
    request.attend_to_padding = true;  // FLUX passes no attention mask
    absl::StatusOr<EncodedText> encoded = model->encode(request);
    ASSERT_THAT(encoded, IsOk());
    const int64_t row = static_cast<int64_t>(i);
    EXPECT_EQ(encoded->pooled.sizes(), pooled[row].sizes());
    EXPECT_EQ(encoded->hidden_states.sizes(), last[row].sizes());
    const double diff = max_abs_diff(encoded->pooled, pooled[row]);
    std::printf("pooled_prompt_embeds[%zu] via encode: max abs diff %.3g\n", i, diff);
    EXPECT_LT(diff, kClipTolerance);
    EXPECT_LT(max_abs_diff(encoded->hidden_states, last[row]), kClipTolerance);
    EXPECT_TRUE(torch::equal(encoded->attention_mask, mask[row].ne(0)));
    EXPECT_EQ(encoded->tokens, mask[row].sum().item<int64_t>());
  }
}

// Writes the fixture's weights as one file, every name with `prefix` and the
// extras a ComfyUI clip_l.safetensors carries (text_projection, logit_scale).
std::string write_single_file(const TempDir& dir, const std::string& prefix) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(clip_fixture() + "/model.safetensors");
  EXPECT_THAT(src, IsOk());
  if (!src.ok()) return "";
  const TensorRecord* tokens = (*src)->find("text_model.embeddings.token_embedding.weight");
  EXPECT_NE(tokens, nullptr);
  const int64_t width = tokens->shape[1];
  std::vector<TensorSpec> specs;
  for (const TensorRecord& t : (*src)->tensors()) specs.push_back({prefix + t.name, t.dtype, t.shape});
  specs.push_back({prefix + "text_projection.weight", DType::kF32, {width, width}});
  specs.push_back({prefix + "logit_scale", DType::kF32, {}});
  const std::string path = dir.path("clip_l.safetensors");
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(path, specs);
  EXPECT_THAT(w, IsOk());
  if (!w.ok()) return "";
  for (const TensorRecord& t : (*src)->tensors()) {
    std::string bytes(t.nbytes, '\0');
    EXPECT_THAT((*src)->read(t, bytes.data()), IsOk());
    EXPECT_THAT((*w)->append(bytes.data(), static_cast<int64_t>(bytes.size())), IsOk());
  }
  const torch::Tensor eye = torch::eye(width, torch::kFloat32);
  EXPECT_THAT((*w)->append(eye.data_ptr(), eye.numel() * 4), IsOk());
  const float scale = 4.6f;
  EXPECT_THAT((*w)->append(&scale, 4), IsOk());
  EXPECT_THAT((*w)->close(), IsOk());
  return path;
}

TEST(ClipParitySingleFile, ComfyUiAndBundleLayoutsLoadWithTheFixturesConfig) {
  SKIP_WITHOUT_FIXTURE();
  TensorFile io(clip_fixture() + "/io.safetensors");
  for (const std::string prefix : {"", "text_encoders.clip_l.transformer."}) {
    TempDir dir;
    const std::string path = write_single_file(dir, prefix);
    ASSERT_FALSE(path.empty());
    absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(path);
    ASSERT_THAT(ckpt, IsOk());
    // Recognised by its tensors alone, the config then inferred.
    EXPECT_EQ(find_model_family(**ckpt), clip_family()) << "prefix '" << prefix << "'";
    // Its heads are not in its shapes: inferred at CLIP's head width of 64
    // (every released tower's), else refused asking for a config.
    absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = clip_family()->recipe(**ckpt);
    const json config = read_json_file(clip_fixture() + "/config.json");
    if (config.at("hidden_size").get<int64_t>() % 64 == 0) {
      ASSERT_THAT(recipe, IsOk());
      EXPECT_THAT((*recipe)->describe(), HasSubstr("inferred"));
    } else {
      EXPECT_THAT(recipe.status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name a config.json")));
    }
    // With the fixture's config named, the forward matches.
    testing::LoadedModel loaded = load_test_model(path, ModelLoadOptions(), clip_fixture() + "/config.json");
    const ClipTextModel* model = loaded.get<ClipTextModel>();
    ASSERT_NE(model, nullptr) << "prefix '" << prefix << "'";
    absl::StatusOr<ClipTextOutputs> out = model->forward(io.get("pipe.input_ids"), torch::Tensor());
    ASSERT_THAT(out, IsOk());
    EXPECT_LT(max_abs_diff(out->pooler_output, io.get("pipe.pooled_prompt_embeds")), kClipTolerance) << prefix;
  }
}

// At bfloat16 the fixture's weights are exact (they are BF16), so the
// embeddings match bit for bit; later states carry bfloat16 rounding.
TEST(ClipParityBf16, RunsAtTheComputeDtype) {
  SKIP_WITHOUT_FIXTURE();
  ModelLoadOptions options;
  options.compute_dtype = torch::kBFloat16;
  testing::LoadedModel loaded = load_test_model(clip_fixture(), options);
  const ClipTextModel* model = loaded.get<ClipTextModel>();
  ASSERT_NE(model, nullptr);
  TensorFile io(clip_fixture() + "/io.safetensors");
  const torch::Tensor ids = io.get("pipe.input_ids");
  absl::StatusOr<ClipTextOutputs> h0 = model->forward(ids, torch::Tensor(), 0);
  ASSERT_THAT(h0, IsOk());
  EXPECT_EQ(h0->hidden_state.scalar_type(), torch::kBFloat16);
  // token + position, each exact in BF16, summed at BF16.
  EXPECT_LT(max_abs_diff(h0->hidden_state, io.get("pipe.hidden_states.0")),
            io.get("pipe.hidden_states.0").abs().max().item<double>() / 128);
  EXPECT_EQ(h0->pooler_output.scalar_type(), torch::kBFloat16);
  const torch::Tensor expected = io.get("pipe.pooled_prompt_embeds");
  const double diff = max_abs_diff(h0->pooler_output, expected);
  const double scale = expected.abs().max().item<double>();
  std::printf("bfloat16 pooler_output: max abs diff %.3g (max abs %.3g)\n", diff, scale);
  EXPECT_LT(diff, 0.05 * scale);
}

// ------------------------------------------------ random folders (no fixture)

class ClipParityRandomFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = demo_clip_text_config();
    ASSERT_THAT(write_random_clip_text_encoder(dir_.path("text_encoder"), config_, 7), IsOk());
    ASSERT_THAT(write_clip_tokenizer(dir_.path("tokenizer")), IsOk());
    loaded_ = load_test_model(dir_.path("text_encoder"), ModelLoadOptions());
    model_ = loaded_.get<ClipTextModel>();
    ASSERT_NE(model_, nullptr);
  }

  TempDir dir_;
  ClipTextConfig config_;
  testing::LoadedModel loaded_;
  const ClipTextModel* model_ = nullptr;
};

TEST_F(ClipParityRandomFolder, LoadsWithItsTokenizerAndEncodes) {
  ASSERT_NE(model_->tokenizer(), nullptr);
  EXPECT_EQ(model_->config().hidden_size, config_.hidden_size);
  EXPECT_GE(model_->config().vocab_size, model_->tokenizer()->id_limit());
  TextEncoding request;
  request.text = "A photo of the cat, sitting on a chair";
  request.max_tokens = config_.max_position_embeddings;
  request.pad_to_max_tokens = true;
  request.attend_to_padding = true;
  absl::StatusOr<EncodedText> encoded = model_->encode(request);
  ASSERT_THAT(encoded, IsOk());
  EXPECT_EQ(encoded->hidden_states.sizes().vec(),
            (std::vector<int64_t>{config_.max_position_embeddings, config_.hidden_size}));
  EXPECT_EQ(encoded->pooled.sizes().vec(), std::vector<int64_t>{config_.hidden_size});
  EXPECT_GT(encoded->tokens, 2);
  EXPECT_EQ(encoded->attention_mask.sum().item<int64_t>(), encoded->tokens);
  // The pooled row is the first <|endoftext|>: the last token.
  EXPECT_TRUE(torch::equal(encoded->pooled, encoded->hidden_states[encoded->tokens - 1]));
  // Without padding, only the text's own tokens; the pooled vector is the same
  // (the causal mask keeps padding out of it).
  request.pad_to_max_tokens = false;
  absl::StatusOr<EncodedText> alone = model_->encode(request);
  ASSERT_THAT(alone, IsOk());
  EXPECT_EQ(alone->hidden_states.size(0), encoded->tokens);
  EXPECT_LT(max_abs_diff(alone->pooled, encoded->pooled), 1e-5);
  // The penultimate layer, as SD-style pipelines ask.
  request.hidden_layer = -2;
  absl::StatusOr<EncodedText> penultimate = model_->encode(request);
  ASSERT_THAT(penultimate, IsOk());
  EXPECT_FALSE(torch::equal(penultimate->hidden_states, alone->hidden_states));
  EXPECT_TRUE(torch::equal(penultimate->pooled, alone->pooled));
}

TEST_F(ClipParityRandomFolder, RefusesBadInputsNamingThem) {
  const int64_t positions = config_.max_position_embeddings;
  EXPECT_THAT(model_->step({{"input_ids", torch::zeros({1, positions + 1}, torch::kInt64)}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(absl::StrCat(positions + 1, " positions")), HasSubstr("position embeddings"))));
  EXPECT_THAT(model_->step({{"input_ids", torch::full({1, 3}, config_.vocab_size, torch::kInt64)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("but the vocabulary is")));
  EXPECT_THAT(model_->step({{"input_ids", torch::zeros({1, 3}, torch::kFloat32)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input_ids must be integer [B, L]")));
  EXPECT_THAT(
      model_->step({{"input_ids", torch::zeros({1, 3}, torch::kInt64)}, {"attention_mask", torch::ones({1, 4})}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("attention_mask must be bool or integer [1, 3]")));
  EXPECT_THAT(model_->step({{"ids", torch::zeros({1, 3}, torch::kInt64)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input \"ids\"")));
  EXPECT_THAT(model_->step({}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing \"input_ids\"")));
  EXPECT_THAT(model_->forward(torch::zeros({1, 3}, torch::kInt64), torch::Tensor(), config_.num_hidden_layers + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hidden layer 3 is out of range")));
  // A text longer than the position table, with no max_tokens to cut it.
  TextEncoding request;
  for (int i = 0; i < 100; ++i) request.text += "cat ";
  EXPECT_THAT(model_->encode(request), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("position embeddings")));
  request.text = "ok\xff";
  EXPECT_THAT(model_->encode(request), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 2")));
}

TEST_F(ClipParityRandomFolder, StepAndPaddingMaskAgree) {
  const int64_t sot = model_->tokenizer()->token_to_id("<|startoftext|>");
  const int64_t eot = model_->tokenizer()->token_to_id("<|endoftext|>");
  const torch::Tensor input = torch::tensor(std::vector<int64_t>{sot, 70, 80, eot, eot, eot}).reshape({1, 6});
  const torch::Tensor mask = torch::tensor(std::vector<int64_t>{1, 1, 1, 1, 0, 0}).reshape({1, 6});
  absl::StatusOr<NamedTensors> masked = model_->step({{"input_ids", input}, {"attention_mask", mask}});
  absl::StatusOr<NamedTensors> plain = model_->step({{"input_ids", input}});
  ASSERT_THAT(masked, IsOk());
  ASSERT_THAT(plain, IsOk());
  // Rows up to the end of text see no padding either way.
  EXPECT_LT(
      max_abs_diff(masked->at("last_hidden_state").narrow(1, 0, 4), plain->at("last_hidden_state").narrow(1, 0, 4)),
      1e-6);
  EXPECT_LT(max_abs_diff(masked->at("pooler_output"), plain->at("pooler_output")), 1e-6);
  EXPECT_TRUE(torch::equal(plain->at("pooler_output")[0], plain->at("last_hidden_state")[0][3]));
  // A mask with nothing before the first token: that row sees every key.
  absl::StatusOr<NamedTensors> left_padded =
      model_->step({{"input_ids", input},
                    {"attention_mask", torch::tensor(std::vector<int64_t>{0, 1, 1, 1, 1, 1}).reshape({1, 6})}});
  ASSERT_THAT(left_padded, IsOk());
  EXPECT_FALSE(torch::isnan(left_padded->at("last_hidden_state")).any().item<bool>());
}

TEST_F(ClipParityRandomFolder, ActivationEstimateGrowsWithTokensAndStopsAtThePositionTable) {
  const int64_t small = model_->encode_activation_bytes(8), full = model_->encode_activation_bytes(77);
  EXPECT_GT(small, 0);
  EXPECT_GT(full, small);
  EXPECT_EQ(model_->encode_activation_bytes(10000), full);
  // At least the residual stream and one head's float32 scores.
  EXPECT_GT(full, 77 * config_.hidden_size * 4 + 77 * 77 * 4);
}

TEST(ClipParityRandomFolderConfig, WithProjectionKeepsTextProjection) {
  TempDir dir;
  ClipTextConfig config = demo_clip_text_config();
  config.with_projection = true;
  config.projection_dim = 32;
  config.eos_token_id = static_cast<int64_t>(clip_tokenizer_id_limit() - 1);  // the newer form: first <|endoftext|>
  ASSERT_THAT(write_random_clip_text_encoder(dir.path("text_encoder"), config, 11), IsOk());
  ASSERT_THAT(write_clip_tokenizer(dir.path("tokenizer")), IsOk());
  testing::LoadedModel loaded = load_test_model(dir.path("text_encoder"), ModelLoadOptions());
  const ClipTextModel* model = loaded.get<ClipTextModel>();
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(model->config().with_projection);
  EXPECT_FALSE(model->config().pools_at_largest_id());
  TextEncoding request;
  request.text = "the cat";
  request.max_tokens = 77;
  request.pad_to_max_tokens = true;
  request.attend_to_padding = true;
  absl::StatusOr<EncodedText> encoded = model->encode(request);
  ASSERT_THAT(encoded, IsOk());
  EXPECT_EQ(encoded->pooled.sizes().vec(), std::vector<int64_t>{32});
  absl::StatusOr<NamedTensors> step = model->step(
      {{"input_ids",
        torch::tensor(std::vector<int64_t>{config.eos_token_id - 1, 70, config.eos_token_id}).reshape({1, 3})}});
  ASSERT_THAT(step, IsOk());
  ASSERT_EQ(step->count("text_embeds"), 1u);
  const torch::Tensor w = model->weights().dense("text_projection.weight")->to(torch::kFloat32);
  EXPECT_LT(max_abs_diff(step->at("text_embeds"), torch::matmul(step->at("pooler_output"), w.t())), 1e-5);
  EXPECT_TRUE(torch::equal(step->at("pooler_output")[0], step->at("last_hidden_state")[0][2]));
}

}  // namespace
}  // namespace diffusiond
