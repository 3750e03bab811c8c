#include "tools/random_models/t5_random.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/t5/t5_params.h"
#include "core/text/sentencepiece_model.h"
#include "core/text/sentencepiece_trainer.h"
#include "core/util/file_text.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

using json = nlohmann::ordered_json;

// Prompts of the kind the pipelines see, a few languages, digits and
// punctuation: enough text for a few hundred pieces.
constexpr const char* kCorpus[] = {
    "A photo of a red fox in the snow, highly detailed, 8k, trending on artstation.",
    "The quick brown fox jumps over the lazy dog. A cat sitting on a chair.",
    "A beautiful landscape with mountains, a lake and a forest at sunset, cinematic lighting.",
    "Portrait of a young woman wearing a red dress, soft light, bokeh background.",
    "The city at night with neon lights, rain on the street, reflections, wide angle.",
    "A bowl of fruit on a wooden table: apples, oranges, grapes and a banana.",
    "An astronaut riding a horse on the moon, digital art, vivid colors.",
    "A small cabin in the woods, smoke rising from the chimney, winter morning.",
    "Hello world! How are you today? I'm fine, thanks -- and you? Numbers: 2024, 1024x1024, 3.14159, 42.",
    "A vintage poster of a steam train crossing a bridge over a river, retro style.",
    "Close-up of a dragonfly on a leaf, macro photography, shallow depth of field.",
    "A robot painting a canvas in a sunny studio, oil painting, impressionist.",
    "Ein Foto eines roten Fuchses im Schnee. Une photo d'un renard roux dans la neige.",
    "Una foto de un zorro rojo en la nieve. El nino come una manzana.",
    "def main(): return {'a': [1, 2, 3]}  # code with (parens) [brackets] and under_scores",
    "Prices: $100, 200 EUR, 300 GBP. Email: test@example.com, URL https://example.com/path?q=1&r=2",
};

std::string added_token(const std::string& content, bool strips) {
  json j;
  j["content"] = content;
  j["lstrip"] = strips;
  j["normalized"] = false;
  j["rstrip"] = strips;
  j["single_word"] = false;
  j["special"] = true;
  return j.dump();
}

std::string tokenizer_config_json(int pieces, const T5TokenizerFiles& files) {
  json decoder = json::object();
  const char* specials[] = {"<pad>", "</s>", "<unk>"};
  for (int i = 0; i < 3; ++i) decoder[std::to_string(i)] = json::parse(added_token(specials[i], false));
  json sentinels = json::array();
  for (int64_t i = files.extra_ids - 1; i >= 0; --i) {
    decoder[std::to_string(pieces - 1 + files.extra_ids - i)] =
        json::parse(added_token(absl::StrCat("<extra_id_", i, ">"), true));
  }
  for (int64_t i = 0; i < files.extra_ids; ++i) sentinels.push_back(absl::StrCat("<extra_id_", i, ">"));
  json j;
  j["add_prefix_space"] = true;
  j["added_tokens_decoder"] = decoder;
  j["additional_special_tokens"] = sentinels;
  j["clean_up_tokenization_spaces"] = false;
  j["eos_token"] = "</s>";
  j["extra_ids"] = files.extra_ids;
  j["legacy"] = files.legacy;
  j["model_max_length"] = 512;
  j["pad_token"] = "<pad>";
  j["sp_model_kwargs"] = json::object();
  j["tokenizer_class"] = "T5Tokenizer";
  j["unk_token"] = "<unk>";
  return j.dump(2) + "\n";
}

std::string special_tokens_map_json(const T5TokenizerFiles& files) {
  json j;
  json sentinels = json::array();
  for (int64_t i = 0; i < files.extra_ids; ++i) sentinels.push_back(absl::StrCat("<extra_id_", i, ">"));
  j["additional_special_tokens"] = sentinels;
  j["eos_token"] = "</s>";
  j["pad_token"] = "<pad>";
  j["unk_token"] = "<unk>";
  return j.dump(2) + "\n";
}

// The config as save_pretrained writes it: the parser's fields, and token
// ids, a dtype and the tying it does not read.
std::string t5_config_json(const T5Config& config) {
  nlohmann::json j = to_json(config);
  j["eos_token_id"] = 1;
  j["pad_token_id"] = 0;
  j["tie_word_embeddings"] = false;
  j["torch_dtype"] = "bfloat16";
  return j.dump(2) + "\n";
}

}  // namespace

T5Config demo_t5_config() {
  T5Config c;
  c.vocab_size = 384;
  c.d_model = 256;
  c.d_kv = 32;
  c.num_heads = 4;
  c.d_ff = 512;
  c.num_layers = 2;
  c.feed_forward = T5FeedForward::kGatedGelu;
  return c;
}

absl::Status write_random_t5_encoder(const std::string& dir, const T5Config& config, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", t5_config_json(config)));
  return write_random_weights(dir + "/model.safetensors", t5_parameter_table(config), seed);
}

absl::Status write_t5_tokenizer(const std::string& dir, const T5TokenizerFiles& files) {
  std::string model, error;
  if (!files.spiece_model_path.empty()) {
    absl::StatusOr<std::string> bytes = read_text_file(files.spiece_model_path, int64_t{64} << 20);
    if (!bytes.ok()) return absl::InvalidArgumentError(std::string(bytes.status().message()));
    model = std::move(*bytes);
  } else {
    UnigramTrainingOptions options;
    options.vocab_size = files.train_vocab_size;
    options.byte_fallback = files.byte_fallback;
    if (!train_unigram_model(std::vector<std::string>(std::begin(kCorpus), std::end(kCorpus)), options, &model,
                             &error)) {
      return absl::InvalidArgumentError(absl::StrCat("training the demo spiece.model: ", error));
    }
  }
  const std::unique_ptr<SentencePieceModel> loaded = SentencePieceModel::load(model, false, &error);
  if (loaded == nullptr) return absl::InvalidArgumentError(absl::StrCat(files.spiece_model_path, ": ", error));
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/spiece.model", model));
  DIFFUSIOND_RETURN_IF_ERROR(
      write_text_file(dir + "/tokenizer_config.json", tokenizer_config_json(loaded->size(), files)));
  return write_text_file(dir + "/special_tokens_map.json", special_tokens_map_json(files));
}

}  // namespace diffusiond
