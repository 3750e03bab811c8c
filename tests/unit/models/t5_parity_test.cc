// Parity of the T5 v1.1 / UMT5 encoder and the T5 tokenizer with upstream
// (transformers' T5EncoderModel, UMT5EncoderModel and slow T5Tokenizer;
// diffusers' FluxPipeline and WanPipeline._get_t5_prompt_embeds) on the
// reference fixtures: $DIFFUSIOND_T5_FIXTURE (default fixtures_dir()/t5-tiny,
// FLUX.1's text_encoder_2) in the T5Parity suite and
// $DIFFUSIOND_UMT5_FIXTURE (default umt5-tiny, Wan's text encoder) in
// T5ParityUmt5. Checked: every tokenizer case (ids with and without </s>,
// tokens, decode, the other `legacy` value, sentencepiece's own pieces,
// Wan's cleaned texts), truncation, the pipeline's ids; the relative
// position buckets and every block's bias; every hidden state of the
// masked batch and of the pipeline batch, prompts alone, the pipeline's
// prompt embeds through encode(); loads from a diffusers pipeline layout,
// the bare fixture folder and single files in ComfyUI's and unprefixed
// naming; FP8 storage and bfloat16 compute.
//
// Everything is read from the fixture: sizes, bucket counts, distances,
// lengths, the legacy flag; the pipeline's convention from io.safetensors
// (a "pipe.last_hidden_state" means Wan's: the mask is passed and padded
// rows are zeroed; otherwise FLUX's: no mask). Tolerance: five times the
// fixture's float32-vs-float64 spread (stats.json), as its README advises.
// A fixture folder that is not there skips the suite with a message.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/models/t5/t5_attention.h"
#include "core/models/t5/t5_config.h"
#include "core/models/t5/t5_model.h"
#include "core/text/sentencepiece_files.h"
#include "core/text/sentencepiece_model.h"
#include "core/text/token_batch.h"
#include "core/util/cancellation.h"
#include "core/util/cancellation_scope.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/fp8_format.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::masked_diff;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::read_json_file;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;
using ::testing::HasSubstr;
using json = nlohmann::json;

std::vector<int32_t> ids_of(const json& array) { return array.get<std::vector<int32_t>>(); }

// How many tensors "<prefix><i>" (i = 0, 1, …) `file` holds.
int count_items(const std::string& file, const std::string& prefix) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> io = Checkpoint::open(file);
  EXPECT_THAT(io, IsOk());
  int n = 0;
  while (io.ok() && (*io)->find(absl::StrCat(prefix, n)) != nullptr) ++n;
  return n;
}

bool has_tensor(const std::string& file, const std::string& name) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> io = Checkpoint::open(file);
  return io.ok() && (*io)->find(name) != nullptr;
}

// Whether WanPipeline's prompt_clean leaves `text` as it is: html.unescape
// changes only text with '&', and whitespace_clean only leading, trailing,
// repeated or non-space whitespace. (The cleaning is the pipeline's, not
// the tokenizer's; texts it would change are checked through the ids the
// fixture stores.)
bool clean_is_identity(const std::string& text) {
  if (text.empty() || text.front() == ' ' || text.back() == ' ' || absl::StrContains(text, "  ")) return false;
  for (const unsigned char c : text) {
    if (c == '&' || c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

// Wan's prompt embeds: each item's first seq_len rows, zeros after.
torch::Tensor zero_padding_rows(const torch::Tensor& hidden, const torch::Tensor& mask) {
  return hidden * mask.ne(0).unsqueeze(-1).to(hidden.scalar_type());
}

// Copies the fixture's weights into a single file at `path`, renamed by
// `rename` (empty: dropped), with `extra` tensors (copies of `extra`'s
// sources under new names) appended.
void write_renamed_copy(const std::string& fixture, const std::string& path,
                        const std::function<std::string(const std::string&)>& rename,
                        const std::vector<std::pair<std::string, std::string>>& extra) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(fixture + "/model.safetensors");
  ASSERT_THAT(src, IsOk());
  std::vector<TensorSpec> specs;
  std::vector<const TensorRecord*> sources;
  for (const TensorRecord& t : (*src)->tensors()) {
    const std::string name = rename(t.name);
    if (name.empty()) continue;
    specs.push_back({name, t.dtype, t.shape});
    sources.push_back(&t);
  }
  for (const auto& [name, from] : extra) {
    const TensorRecord* t = (*src)->find(from);
    ASSERT_NE(t, nullptr) << from;
    specs.push_back({name, t->dtype, t->shape});
    sources.push_back(t);
  }
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(path, specs);
  ASSERT_THAT(w, IsOk());
  for (const TensorRecord* t : sources) {
    std::string bytes(static_cast<size_t>(t->nbytes), '\0');
    ASSERT_THAT((*src)->read(*t, bytes.data()), IsOk());
    ASSERT_THAT((*w)->append(bytes.data(), static_cast<int64_t>(bytes.size())), IsOk());
  }
  ASSERT_THAT((*w)->close(), IsOk());
}

// What FP8 storage casts in a T5 encoder: the attention projections (not
// the relative bias) and wi; wo stays at compute precision.
bool is_fp8_projection(const std::string& name) {
  return (absl::StrContains(name, "SelfAttention.") && !absl::StrContains(name, "relative")) ||
         absl::StrContains(name, ".wi");
}

// Copies the fixture's BF16 weights into a single file at `path` as
// ComfyUI's t5xxl_fp8_e4m3fn.safetensors stores them: the projections as
// F8_E4M3 codes (no scale), the rest as they are.
void write_fp8_copy(const std::string& fixture, const std::string& path) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(fixture + "/model.safetensors");
  ASSERT_THAT(src, IsOk());
  std::vector<TensorSpec> specs;
  for (const TensorRecord& t : (*src)->tensors()) {
    ASSERT_EQ(t.dtype, DType::kBF16) << t.name;
    specs.push_back({t.name, is_fp8_projection(t.name) ? DType::kF8E4M3 : t.dtype, t.shape});
  }
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(path, specs);
  ASSERT_THAT(w, IsOk());
  for (const TensorRecord& t : (*src)->tensors()) {
    std::string bytes(static_cast<size_t>(t.nbytes), '\0');
    ASSERT_THAT((*src)->read(t, bytes.data()), IsOk());
    if (is_fp8_projection(t.name)) {
      std::string codes(bytes.size() / 2, '\0');
      for (size_t i = 0; i < codes.size(); ++i) {
        uint16_t bf16 = 0;
        std::memcpy(&bf16, bytes.data() + 2 * i, 2);
        const uint32_t bits = static_cast<uint32_t>(bf16) << 16;
        float value = 0;
        std::memcpy(&value, &bits, 4);
        codes[i] = static_cast<char>(fp8_encode_ref(value, Fp8Format::kE4M3Fn));
      }
      bytes = std::move(codes);
    }
    ASSERT_THAT((*w)->append(bytes.data(), static_cast<int64_t>(bytes.size())), IsOk());
  }
  ASSERT_THAT((*w)->close(), IsOk());
}

// One fixture and everything read from it.
class T5ParityBase : public ::testing::Test {
 protected:
  T5ParityBase(const char* env_var, const char* default_name)
      : dir_(::diffusiond::testing::fixture_folder(env_var, default_name)), env_var_(env_var) {}

  void SetUp() override {
    if (!std::filesystem::exists(dir_ + "/io.safetensors")) {
      GTEST_SKIP() << "no fixture at " << dir_ << " (set " << env_var_ << " to a T5 fixture folder)";
    }
    io_ = std::make_unique<TensorFile>(io_path());
    tokens_ = read_json_file(dir_ + "/tokens.json");
    stats_ = read_json_file(dir_ + "/stats.json");
    absl::StatusOr<T5Config> config = t5_config_from_json(read_json_file(dir_ + "/config.json"), "config.json");
    ASSERT_THAT(config, IsOk());
    config_ = *config;
    tolerance_ = 5 * std::max(stats_.value("f64_mask_all", 0.0), stats_.value("f64_pipe", 0.0));
    ASSERT_GT(tolerance_, 0) << "stats.json has no float64 spread";
    wan_ = has_tensor(io_path(), "pipe.last_hidden_state");
  }

  std::string io_path() const { return dir_ + "/io.safetensors"; }
  std::unique_ptr<SentencePieceTokenizer> tokenizer(std::optional<bool> legacy = std::nullopt) const {
    absl::StatusOr<SentencePieceTokenizerSpec> spec = read_sentencepiece_spec(dir_ + "/tokenizer");
    EXPECT_THAT(spec, IsOk());
    if (!spec.ok()) return nullptr;
    if (legacy.has_value()) spec->legacy = *legacy;
    absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t = SentencePieceTokenizer::create(*spec);
    EXPECT_THAT(t, IsOk());
    return t.ok() ? *std::move(t) : nullptr;
  }

  // Loads the fixture as a diffusers pipeline lays it out (FLUX:
  // text_encoder_2 + tokenizer_2; Wan: text_encoder + tokenizer), so the
  // family finds the tokenizer.
  testing::LoadedModel load_pipeline_layout(const ModelLoadOptions& options = {}) {
    const std::string encoder = wan_ ? "text_encoder" : "text_encoder_2";
    const std::string tokenizer = wan_ ? "tokenizer" : "tokenizer_2";
    std::filesystem::create_directories(tmp_.path(encoder));
    for (const char* file : {"config.json", "model.safetensors"}) {
      std::filesystem::create_symlink(dir_ + "/" + file, tmp_.path(encoder + "/" + file));
    }
    std::filesystem::create_directory_symlink(dir_ + "/tokenizer", tmp_.path(tokenizer));
    return load_test_model(tmp_.path(encoder), options);
  }

  // Every hidden state of `set` ("mask" or "pipe") against the fixture,
  // over all rows (query rows of padding are computed upstream too).
  void expect_hidden_states(const T5Encoder& model, const std::string& set, const torch::Tensor& mask) {
    const torch::Tensor ids = io_->get(set + ".input_ids");
    for (int64_t k = 0; k <= config_.num_layers; ++k) {
      absl::StatusOr<torch::Tensor> h = model.hidden_states(ids, mask, k);
      ASSERT_THAT(h, IsOk());
      const torch::Tensor expected = io_->get(absl::StrCat(set, ".hidden_states.", k));
      const double diff = max_abs_diff(*h, expected);
      std::printf("%s.hidden_states[%lld]: max abs diff %.3g\n", set.c_str(), static_cast<long long>(k), diff);
      EXPECT_LT(diff, tolerance_) << set << " hidden state " << k;
    }
    absl::StatusOr<torch::Tensor> last = model.hidden_states(ids, mask, -1);
    absl::StatusOr<torch::Tensor> same = model.hidden_states(ids, mask, config_.num_layers);
    ASSERT_THAT(last, IsOk());
    ASSERT_THAT(same, IsOk());
    EXPECT_TRUE(torch::equal(*last, *same));
  }

  // The pipeline batch's mask as the pipeline passes it.
  torch::Tensor pipeline_mask() const { return wan_ ? io_->get("pipe.attention_mask") : torch::Tensor(); }

  void check_tokenizer_cases();
  void check_other_legacy_value();
  void check_sentencepiece_pieces();
  void check_truncation_and_pipeline_ids();
  void check_buckets_and_position_bias();
  void check_masked_batch_and_prompts_alone();
  void check_pipeline_prompt_embeds();
  void check_single_files();
  void check_fp8_file();
  void check_fp8_storage();
  void check_bfloat16();
  void check_step_and_cancellation();

  const std::string dir_;
  const char* const env_var_;
  TempDir tmp_;
  std::unique_ptr<TensorFile> io_;
  json tokens_, stats_;
  T5Config config_;
  double tolerance_ = 0;
  bool wan_ = false;
};

class T5Parity : public T5ParityBase {
 protected:
  T5Parity() : T5ParityBase("DIFFUSIOND_T5_FIXTURE", "t5-tiny") {}
};

class T5ParityUmt5 : public T5ParityBase {
 protected:
  T5ParityUmt5() : T5ParityBase("DIFFUSIOND_UMT5_FIXTURE", "umt5-tiny") {}
};

void T5ParityBase::check_tokenizer_cases() {
  const std::unique_ptr<SentencePieceTokenizer> t = tokenizer();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->legacy(), tokens_.at("legacy").get<bool>());
  EXPECT_EQ(t->id_limit(), stats_.at("len_tokenizer").get<int32_t>());
  const json& cases = tokens_.at("cases");
  ASSERT_FALSE(cases.empty());
  int wan_cases = 0;
  for (const json& c : cases) {
    const std::string name = c.at("name").get<std::string>();
    absl::StatusOr<std::vector<int32_t>> ids = t->encode(c.at("text").get<std::string>());
    ASSERT_THAT(ids, IsOk()) << name;
    EXPECT_EQ(*ids, ids_of(c.at("ids_no_special"))) << name;
    const std::vector<int32_t> wrapped = t->with_special_tokens(*ids);
    EXPECT_EQ(wrapped, ids_of(c.at("ids"))) << name;
    std::vector<std::string> tokens;
    for (const int32_t id : wrapped) tokens.push_back(t->id_to_token(id) != nullptr ? *t->id_to_token(id) : "?");
    EXPECT_EQ(tokens, c.at("tokens").get<std::vector<std::string>>()) << name;
    absl::StatusOr<std::string> text = t->decode(wrapped, SentencePieceDecodeOptions{true});
    ASSERT_THAT(text, IsOk()) << name;
    EXPECT_EQ(*text, c.at("decode").get<std::string>()) << name;
    if (c.contains("wan_clean")) {
      ++wan_cases;
      absl::StatusOr<std::vector<int32_t>> wan = t->encode(c.at("wan_clean").get<std::string>());
      ASSERT_THAT(wan, IsOk()) << name;
      EXPECT_EQ(t->with_special_tokens(*wan), ids_of(c.at("wan_ids"))) << name << " (Wan's cleaned text)";
    }
  }
  std::printf("%zu tokenizer cases, %d with Wan's cleaned text\n", cases.size(), wan_cases);
}

void T5ParityBase::check_other_legacy_value() {
  const bool legacy = tokens_.at("legacy").get<bool>();
  const std::unique_ptr<SentencePieceTokenizer> t = tokenizer(!legacy);
  ASSERT_NE(t, nullptr);
  const std::string key = legacy ? "ids_legacy_false" : "ids_legacy_true";
  int differ = 0;
  for (const json& c : tokens_.at("cases")) {
    absl::StatusOr<std::vector<int32_t>> ids = t->encode(c.at("text").get<std::string>());
    ASSERT_THAT(ids, IsOk());
    EXPECT_EQ(t->with_special_tokens(*ids), ids_of(c.at(key))) << c.at("name");
    differ += c.at(key) != c.at("ids");
  }
  std::printf("%s: %d cases differ from the files' legacy=%d\n", key.c_str(), differ, legacy);
}

void T5ParityBase::check_sentencepiece_pieces() {
  absl::StatusOr<std::string> bytes = read_text_file(dir_ + "/tokenizer/spiece.model", 64 << 20);
  ASSERT_THAT(bytes, IsOk());
  std::string error;
  const std::unique_ptr<SentencePieceModel> model =
      SentencePieceModel::load(*bytes, !tokens_.at("legacy").get<bool>(), &error);
  ASSERT_NE(model, nullptr) << error;
  for (const json& c : tokens_.at("cases")) {
    std::vector<std::string> pieces;
    ASSERT_TRUE(model->encode(c.at("text").get<std::string>(), &pieces, &error)) << error;
    EXPECT_EQ(pieces, c.at("sp_pieces").get<std::vector<std::string>>()) << c.at("name");
  }
}

void T5ParityBase::check_truncation_and_pipeline_ids() {
  const std::unique_ptr<SentencePieceTokenizer> t = tokenizer();
  ASSERT_NE(t, nullptr);
  const json& tr = tokens_.at("truncation");
  absl::StatusOr<std::vector<int32_t>> full = t->encode(tr.at("long_text").get<std::string>());
  ASSERT_THAT(full, IsOk());
  EXPECT_EQ(t->with_special_tokens(*full), ids_of(tr.at("long_full_ids")));
  TokenizeOptions options;
  options.max_length = tr.at("max_length").get<int64_t>();
  options.pad_to_max_length = true;
  const std::vector<std::string> texts = {tr.at("long_text"), tr.at("short_text")};
  absl::StatusOr<TokenBatch> batch = tokenize_batch(*t, texts, options);
  ASSERT_THAT(batch, IsOk());
  const auto row = [&](const std::vector<int32_t>& v, int64_t r) {
    return std::vector<int32_t>(v.begin() + r * batch->length, v.begin() + (r + 1) * batch->length);
  };
  const std::vector<int32_t> mask(batch->attention_mask.begin(), batch->attention_mask.end());
  EXPECT_EQ(row(batch->ids, 0), ids_of(tr.at("long_ids")));
  EXPECT_EQ(row(batch->ids, 1), ids_of(tr.at("short_ids")));
  EXPECT_EQ(row(mask, 0), ids_of(tr.at("long_mask")));
  EXPECT_EQ(row(mask, 1), ids_of(tr.at("short_mask")));

  // The pipeline's own call, on the prompts its cleaning (Wan's) leaves
  // as they are.
  const json& pipe = tokens_.at("pipeline");
  options.max_length = pipe.at("max_sequence_length").get<int64_t>();
  const std::vector<std::string> prompts = pipe.at("prompts").get<std::vector<std::string>>();
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (wan_ && !clean_is_identity(prompts[i])) {
      std::printf("pipeline prompt %zu: Wan's prompt_clean changes it; its ids are checked through io\n", i);
      continue;
    }
    absl::StatusOr<TokenBatch> one = tokenize_batch(*t, {prompts[i]}, options);
    ASSERT_THAT(one, IsOk());
    EXPECT_EQ(one->ids, ids_of(pipe.at("input_ids").at(i))) << "pipeline prompt " << i;
    EXPECT_EQ(std::vector<int32_t>(one->attention_mask.begin(), one->attention_mask.end()),
              ids_of(pipe.at("attention_mask").at(i)))
        << "pipeline prompt " << i;
  }
}

void T5ParityBase::check_buckets_and_position_bias() {
  const torch::Tensor table = io_->get("dbg.bucket_table");
  const int64_t reach = (table.numel() - 1) / 2;
  const torch::Tensor relative = torch::arange(-reach, reach + 1, torch::kInt64);
  const torch::Tensor ours = t5_relative_position_bucket(relative, config_.relative_attention_num_buckets,
                                                         config_.relative_attention_max_distance);
  EXPECT_TRUE(torch::equal(ours, table)) << "buckets for relative positions -" << reach << ".." << reach;

  testing::LoadedModel l = load_test_model(dir_, {});
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  for (int64_t block = 0; block < config_.num_layers; ++block) {
    const std::string name = absl::StrCat("dbg.position_bias.", block);
    if (!config_.has_relative_bias(block)) {
      EXPECT_FALSE(has_tensor(io_path(), name)) << name;
      EXPECT_THAT(model->position_bias(block, 4), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("block")));
      continue;
    }
    const torch::Tensor expected = io_->get(name);
    absl::StatusOr<torch::Tensor> bias = model->position_bias(block, expected.size(-1));
    ASSERT_THAT(bias, IsOk());
    const double diff = max_abs_diff(*bias, expected[0]);
    std::printf("%s [%lld heads, %lld tokens]: max abs diff %.3g\n", name.c_str(),
                static_cast<long long>(expected.size(1)), static_cast<long long>(expected.size(-1)), diff);
    EXPECT_EQ(diff, 0.0) << name;
  }
}

void T5ParityBase::check_masked_batch_and_prompts_alone() {
  testing::LoadedModel l = load_test_model(dir_, {});
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->architecture(), config_.umt5 ? kUmt5Architecture : kT5Architecture);
  EXPECT_EQ(model->tokenizer(), nullptr);  // the bare folder has none beside it
  const torch::Tensor mask = io_->get("mask.attention_mask");
  expect_hidden_states(*model, "mask", mask);
  absl::StatusOr<torch::Tensor> last = model->hidden_states(io_->get("mask.input_ids"), mask, -1);
  ASSERT_THAT(last, IsOk());
  std::printf("mask.last_hidden_state: %.3g (vs float64 run, tokens only: %.3g)\n",
              max_abs_diff(*last, io_->get("mask.last_hidden_state")),
              masked_diff(*last, io_->get("mask.last_hidden_state_f64"), mask));
  EXPECT_LT(max_abs_diff(*last, io_->get("mask.last_hidden_state")), tolerance_);

  const int items = count_items(io_path(), "single.input_ids.");
  ASSERT_GT(items, 0);
  for (int i = 0; i < items; ++i) {
    absl::StatusOr<torch::Tensor> h =
        model->hidden_states(io_->get(absl::StrCat("single.input_ids.", i)).unsqueeze(0), torch::Tensor(), -1);
    ASSERT_THAT(h, IsOk());
    const double diff = max_abs_diff((*h)[0], io_->get(absl::StrCat("single.last_hidden_state.", i)));
    std::printf("single.last_hidden_state.%d: max abs diff %.3g\n", i, diff);
    EXPECT_LT(diff, tolerance_) << "prompt " << i;
  }
}

void T5ParityBase::check_pipeline_prompt_embeds() {
  testing::LoadedModel l = load_pipeline_layout();
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  ASSERT_NE(model->tokenizer(), nullptr) << "the tokenizer folder beside the encoder was not found";
  const torch::Tensor ids = io_->get("pipe.input_ids"), mask = io_->get("pipe.attention_mask");
  expect_hidden_states(*model, "pipe", pipeline_mask());

  // The raw encoder output (Wan keeps it before zeroing) and the embeds.
  absl::StatusOr<torch::Tensor> last = model->hidden_states(ids, pipeline_mask(), -1);
  ASSERT_THAT(last, IsOk());
  const torch::Tensor embeds = wan_ ? zero_padding_rows(*last, mask) : *last;
  const double diff = max_abs_diff(embeds, io_->get("pipe.prompt_embeds"));
  std::printf("pipe.prompt_embeds (%s): max abs diff %.3g, vs the float64 run %.3g\n", wan_ ? "Wan" : "FLUX", diff,
              max_abs_diff(embeds, io_->get("pipe.prompt_embeds_f64")));
  EXPECT_LT(diff, tolerance_);
  if (wan_) {
    EXPECT_LT(max_abs_diff(*last, io_->get("pipe.last_hidden_state")), tolerance_);
  }

  // Through encode(), as the pipeline asks for each prompt.
  const json& pipe = tokens_.at("pipeline");
  const std::vector<std::string> prompts = pipe.at("prompts").get<std::vector<std::string>>();
  ASSERT_EQ(static_cast<int64_t>(prompts.size()), ids.size(0));
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (wan_ && !clean_is_identity(prompts[i])) continue;  // the pipeline cleans it first
    TextEncoding request;
    request.text = prompts[i];
    request.max_tokens = pipe.at("max_sequence_length").get<int64_t>();
    request.pad_to_max_tokens = true;
    request.attend_to_padding = !wan_;
    absl::StatusOr<EncodedText> encoded = model->encode(request);
    ASSERT_THAT(encoded, IsOk());
    const torch::Tensor row_mask = mask[static_cast<int64_t>(i)];
    EXPECT_TRUE(torch::equal(encoded->attention_mask, row_mask.ne(0))) << "prompt " << i;
    EXPECT_EQ(encoded->tokens, row_mask.sum().item<int64_t>());
    EXPECT_FALSE(encoded->pooled.defined());
    const torch::Tensor got = wan_ ? zero_padding_rows(encoded->hidden_states, row_mask) : encoded->hidden_states;
    const double d = max_abs_diff(got, io_->get("pipe.prompt_embeds")[static_cast<int64_t>(i)]);
    std::printf("encode(pipeline prompt %zu, %lld tokens): max abs diff %.3g\n", i,
                static_cast<long long>(encoded->tokens), d);
    EXPECT_LT(d, tolerance_) << "prompt " << i;
  }
}

// A single file without config.json, as ComfyUI ships T5 (transformers'
// keys), and one with unprefixed names, the embedding only as
// embed_tokens and a decoder and LM head to drop: the config is inferred
// (its max distance assumed 128; a fixture with another gets its
// config.json named).
void T5ParityBase::check_single_files() {
  const bool default_distance = config_.relative_attention_max_distance == 128;
  const auto comfy = [](const std::string& name) { return name; };
  const auto unprefixed = [](const std::string& name) -> std::string {
    if (name == "shared.weight") return "embed_tokens.weight";
    return absl::StartsWith(name, "encoder.") ? name.substr(8) : name;
  };
  const std::string q0 = "encoder.block.0.layer.0.SelfAttention.q.weight";
  struct Variant {
    const char* file;
    std::function<std::string(const std::string&)> rename;
    std::vector<std::pair<std::string, std::string>> extra;
  };
  const std::vector<Variant> variants = {
      {"t5_comfy.safetensors", comfy, {{"encoder.embed_tokens.weight", "shared.weight"}}},
      {"t5_unprefixed.safetensors", unprefixed,
       {{"decoder.block.0.layer.0.SelfAttention.q.weight", q0}, {"lm_head.weight", "shared.weight"}}},
  };
  for (const Variant& v : variants) {
    const std::string path = tmp_.path(v.file);
    ASSERT_NO_FATAL_FAILURE(write_renamed_copy(dir_, path, v.rename, v.extra));
    testing::LoadedModel l = load_test_model(path, {}, default_distance ? "" : dir_ + "/config.json");
    const T5Encoder* model = l.get<T5Encoder>();
    ASSERT_NE(model, nullptr) << v.file;
    const T5Config& c = model->config();
    EXPECT_EQ(c.umt5, config_.umt5);
    EXPECT_EQ(c.d_model, config_.d_model);
    EXPECT_EQ(c.d_kv, config_.d_kv);
    EXPECT_EQ(c.num_heads, config_.num_heads);
    EXPECT_EQ(c.d_ff, config_.d_ff);
    EXPECT_EQ(c.num_layers, config_.num_layers);
    EXPECT_EQ(c.vocab_size, config_.vocab_size);
    EXPECT_EQ(c.relative_attention_num_buckets, config_.relative_attention_num_buckets);
    EXPECT_EQ(c.feed_forward, config_.feed_forward);
    const torch::Tensor mask = io_->get("mask.attention_mask");
    absl::StatusOr<torch::Tensor> last = model->hidden_states(io_->get("mask.input_ids"), mask, -1);
    ASSERT_THAT(last, IsOk());
    const double diff = max_abs_diff(*last, io_->get("mask.last_hidden_state"));
    std::printf("%s: mask.last_hidden_state max abs diff %.3g\n", v.file, diff);
    EXPECT_LT(diff, tolerance_) << v.file;
  }
}

// A file whose projections are FP8 already (ComfyUI's t5xxl_fp8_e4m3fn)
// keeps them as FP8, with no FP8 option asked, and runs exactly as the same
// weights cast to FP8 at load.
void T5ParityBase::check_fp8_file() {
  const std::string path = tmp_.path("t5xxl_fp8_e4m3fn.safetensors");
  ASSERT_NO_FATAL_FAILURE(write_fp8_copy(dir_, path));
  const bool default_distance = config_.relative_attention_max_distance == 128;
  testing::LoadedModel from_file = load_test_model(path, {}, default_distance ? "" : dir_ + "/config.json");
  ModelLoadOptions cast;
  cast.fp8.format = Fp8Format::kE4M3Fn;
  testing::LoadedModel at_load = load_test_model(dir_, cast);
  const T5Encoder* a = from_file.get<T5Encoder>();
  const T5Encoder* b = at_load.get<T5Encoder>();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  int fp8 = 0;
  for (const std::string& name : a->weights().names()) {
    EXPECT_EQ(a->weights().is_fp8(name), is_fp8_projection(name)) << name;
    fp8 += a->weights().is_fp8(name) ? 1 : 0;
  }
  EXPECT_GT(fp8, 0);
  const torch::Tensor ids = io_->get("mask.input_ids"), mask = io_->get("mask.attention_mask");
  absl::StatusOr<torch::Tensor> ours = a->hidden_states(ids, mask, -1);
  absl::StatusOr<torch::Tensor> cast_at_load = b->hidden_states(ids, mask, -1);
  ASSERT_THAT(ours, IsOk());
  ASSERT_THAT(cast_at_load, IsOk());
  EXPECT_TRUE(torch::equal(*ours, *cast_at_load));
}

// The fixture has no FP8 reference: FP8 storage is checked for what it
// stores, against the float32 forward over the same decoded weights, and
// loosely against the reference.
void T5ParityBase::check_fp8_storage() {
  ModelLoadOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  testing::LoadedModel l = load_test_model(dir_, options);
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  const WeightStore& w = model->weights();
  auto decoded = std::make_unique<WeightStore>(torch::kFloat32);
  for (const std::string& name : w.names()) {
    EXPECT_EQ(w.is_fp8(name), is_fp8_projection(name)) << name;
    absl::StatusOr<torch::Tensor> t = w.materialize(name, torch::kFloat32);
    ASSERT_THAT(t, IsOk());
    decoded->add(name, *t);
  }
  absl::StatusOr<std::unique_ptr<T5Encoder>> reference = T5Encoder::create(model->config(), std::move(decoded));
  ASSERT_THAT(reference, IsOk());
  const torch::Tensor ids = io_->get("mask.input_ids"), mask = io_->get("mask.attention_mask");
  absl::StatusOr<torch::Tensor> ours = model->hidden_states(ids, mask, -1);
  absl::StatusOr<torch::Tensor> theirs = (*reference)->hidden_states(ids, mask, -1);
  ASSERT_THAT(ours, IsOk());
  ASSERT_THAT(theirs, IsOk());
  const torch::Tensor expected = io_->get("mask.last_hidden_state");
  const double exact = max_abs_diff(*ours, *theirs), codec = max_abs_diff(*ours, expected);
  const double scale = expected.abs().max().item<double>();
  std::printf("FP8 storage: vs decoded-weight forward %.3g, vs float32 reference %.3g (max abs %.3g)\n", exact,
              codec, scale);
  EXPECT_LT(exact, tolerance_);
  EXPECT_LT(codec, 0.5 * scale);
}

// The fixture's weights are BF16, so at bfloat16 compute the embeddings
// match bit for bit; later states carry bfloat16 rounding.
void T5ParityBase::check_bfloat16() {
  ModelLoadOptions options;
  options.compute_dtype = torch::kBFloat16;
  testing::LoadedModel l = load_test_model(dir_, options);
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  const torch::Tensor ids = io_->get("mask.input_ids"), mask = io_->get("mask.attention_mask");
  absl::StatusOr<torch::Tensor> h0 = model->hidden_states(ids, mask, 0);
  ASSERT_THAT(h0, IsOk());
  EXPECT_EQ(h0->scalar_type(), torch::kBFloat16);
  EXPECT_EQ(max_abs_diff(*h0, io_->get("mask.hidden_states.0")), 0.0);
  absl::StatusOr<torch::Tensor> last = model->hidden_states(ids, mask, -1);
  ASSERT_THAT(last, IsOk());
  const torch::Tensor expected = io_->get("mask.last_hidden_state");
  const double diff = masked_diff(*last, expected, mask), scale = expected.abs().max().item<double>();
  std::printf("bfloat16 mask.last_hidden_state: max abs diff %.3g on tokens (max abs %.3g)\n", diff, scale);
  EXPECT_LT(diff, 0.1 * scale);
}

void T5ParityBase::check_step_and_cancellation() {
  testing::LoadedModel l = load_test_model(dir_, {});
  const T5Encoder* model = l.get<T5Encoder>();
  ASSERT_NE(model, nullptr);
  const torch::Tensor ids = io_->get("mask.input_ids"), mask = io_->get("mask.attention_mask");
  absl::StatusOr<NamedTensors> out = model->step({{"input_ids", ids}, {"attention_mask", mask}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  EXPECT_LT(max_abs_diff(out->at("last_hidden_state"), io_->get("mask.last_hidden_state")), tolerance_);

  const auto invalid = [](const std::string& text) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(text));
  };
  EXPECT_THAT(model->step({}), invalid("missing \"input_ids\""));
  EXPECT_THAT(model->step({{"input_ids", ids}, {"hidden_layer", torch::tensor(1)}}),
              invalid("unexpected input \"hidden_layer\""));
  EXPECT_THAT(model->step({{"input_ids", ids.to(torch::kFloat32)}}), invalid("input_ids must be integer [B, L]"));
  EXPECT_THAT(model->step({{"input_ids", ids + config_.vocab_size}}), invalid("but the vocabulary is [0, "));
  EXPECT_THAT(model->step({{"input_ids", ids}, {"attention_mask", mask.narrow(1, 0, 1)}}),
              invalid("attention_mask must be bool or integer"));
  EXPECT_THAT(model->hidden_states(ids, mask, config_.num_layers + 1), invalid("is out of range"));

  CancellationSource source;
  source.cancel(absl::CancelledError("stop"));
  CancellationScope scope(source.token());
  EXPECT_THAT(model->hidden_states(ids, mask, -1), StatusIs(absl::StatusCode::kCancelled, HasSubstr("stop")));
}

TEST_F(T5Parity, TokenizerCases) { check_tokenizer_cases(); }
TEST_F(T5Parity, TokenizerOtherLegacyValue) { check_other_legacy_value(); }
TEST_F(T5Parity, SentencePiecePieces) { check_sentencepiece_pieces(); }
TEST_F(T5Parity, TruncationAndPipelineIds) { check_truncation_and_pipeline_ids(); }
TEST_F(T5Parity, BucketsAndPositionBias) { check_buckets_and_position_bias(); }
TEST_F(T5Parity, MaskedBatchAndPromptsAlone) { check_masked_batch_and_prompts_alone(); }
TEST_F(T5Parity, PipelinePromptEmbeds) { check_pipeline_prompt_embeds(); }
TEST_F(T5Parity, SingleFiles) { check_single_files(); }
TEST_F(T5Parity, Fp8SingleFileKeepsItsFp8) { check_fp8_file(); }
TEST_F(T5Parity, Fp8Storage) { check_fp8_storage(); }
TEST_F(T5Parity, Bfloat16) { check_bfloat16(); }
TEST_F(T5Parity, StepAndCancellation) { check_step_and_cancellation(); }

TEST_F(T5ParityUmt5, TokenizerCases) { check_tokenizer_cases(); }
TEST_F(T5ParityUmt5, TokenizerOtherLegacyValue) { check_other_legacy_value(); }
TEST_F(T5ParityUmt5, SentencePiecePieces) { check_sentencepiece_pieces(); }
TEST_F(T5ParityUmt5, TruncationAndPipelineIds) { check_truncation_and_pipeline_ids(); }
TEST_F(T5ParityUmt5, BucketsAndPositionBias) { check_buckets_and_position_bias(); }
TEST_F(T5ParityUmt5, MaskedBatchAndPromptsAlone) { check_masked_batch_and_prompts_alone(); }
TEST_F(T5ParityUmt5, PipelinePromptEmbeds) { check_pipeline_prompt_embeds(); }
TEST_F(T5ParityUmt5, SingleFiles) { check_single_files(); }
TEST_F(T5ParityUmt5, Fp8SingleFileKeepsItsFp8) { check_fp8_file(); }
TEST_F(T5ParityUmt5, Fp8Storage) { check_fp8_storage(); }
TEST_F(T5ParityUmt5, Bfloat16) { check_bfloat16(); }
TEST_F(T5ParityUmt5, StepAndCancellation) { check_step_and_cancellation(); }

}  // namespace
}  // namespace diffusiond
