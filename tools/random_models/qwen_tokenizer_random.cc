#include "tools/random_models/qwen_tokenizer_random.h"

#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/text/byte_level.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

using json = nlohmann::ordered_json;

// Qwen2's pre-tokenizer, as tokenizer.json spells it.
constexpr char kQwenSplitRegex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The symbols (UTF-8) of each byte of `word`.
std::vector<std::string> symbols_of(const std::string& word) {
  std::vector<std::string> out;
  for (char c : word) out.push_back(bytes_to_symbols(std::string(1, c)));
  return out;
}

// Merges that build each word from the left: (w0, w1), (w0w1, w2), ...,
// each once, in the order first needed. One of them may also join bytes
// inside a prompt's words (the "sy" of "easy"), which only changes where
// those split.
std::vector<std::pair<std::string, std::string>> merges_of(const std::vector<std::string>& words) {
  std::vector<std::pair<std::string, std::string>> merges;
  std::set<std::pair<std::string, std::string>> seen;
  for (const std::string& word : words) {
    const std::vector<std::string> symbols = symbols_of(word);
    std::string left = symbols.empty() ? "" : symbols[0];
    for (size_t i = 1; i < symbols.size(); ++i) {
      if (seen.insert({left, symbols[i]}).second) merges.emplace_back(left, symbols[i]);
      left += symbols[i];
    }
  }
  return merges;
}

// tokenizer.json: the byte symbols and the merged words as the vocabulary,
// then the special tokens.
std::string tokenizer_json(const QwenTokenizerFiles& files) {
  json vocab = json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) vocab[bytes_to_symbols(std::string(1, static_cast<char>(b)))] = id++;
  json merges = json::array();
  for (const auto& [left, right] : merges_of(files.whole_words)) {
    merges.push_back(left + " " + right);
    vocab[left + right] = id++;
  }
  json added = json::array();
  for (const std::string& token : files.special_tokens) {
    added.push_back({{"id", id++}, {"content", token}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                           {"use_regex", false}};
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", kQwenSplitRegex}}}, {"behavior", "Isolated"},
                           {"invert", false}},
                          byte_level}}};
  j["post_processor"] = byte_level;
  j["decoder"] = byte_level;
  j["model"] = {{"type", "BPE"},           {"dropout", nullptr},   {"unk_token", nullptr},
                {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                {"byte_fallback", false},  {"ignore_merges", false}, {"vocab", vocab},
                {"merges", merges}};
  return j.dump() + "\n";
}

std::string tokenizer_config_json(const QwenTokenizerFiles& files) {
  json j;
  j["tokenizer_class"] = "Qwen2Tokenizer";
  j["pad_token"] = files.special_tokens.size() > 0 ? json(files.special_tokens[0]) : json(nullptr);
  j["eos_token"] = files.special_tokens.size() > 2 ? json(files.special_tokens[2]) : json(nullptr);
  j["bos_token"] = nullptr;
  j["unk_token"] = nullptr;
  return j.dump(2) + "\n";
}

}  // namespace

QwenTokenizerFiles qwen_image_template_tokenizer() {
  QwenTokenizerFiles f;
  f.special_tokens = {"<|endoftext|>",    "<|im_start|>",   "<|im_end|>",
                      "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"};
  f.whole_words = {"system",  "Describe",   " the",      " image",    " by",     " detailing",
                   " color",  " shape",     " size",     " texture",  " quantity", " text",
                   " spatial", " relationships", " of",  " objects",  " and",    " background",
                   "user",    "assistant"};
  return f;
}

absl::Status write_qwen_tokenizer(const std::string& folder, const QwenTokenizerFiles& files, int64_t vocab_size) {
  const int64_t ids = 256 + static_cast<int64_t>(merges_of(files.whole_words).size() + files.special_tokens.size());
  if (ids > vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("the tokenizer for ", folder, " needs ", ids, " ids, more than the text encoder's vocab_size ",
                     vocab_size));
  }
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/tokenizer.json", tokenizer_json(files)));
  return write_text_file(folder + "/tokenizer_config.json", tokenizer_config_json(files));
}

}  // namespace diffusiond
