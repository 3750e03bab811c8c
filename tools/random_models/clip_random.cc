#include "tools/random_models/clip_random.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/models/clip/clip_params.h"
#include "core/text/byte_level.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

using json = nlohmann::ordered_json;

// A few merges of frequent English words, in CLIP's spelling: each result
// is a token, ranked by position.
const std::vector<std::pair<std::string, std::string>>& merges() {
  static const auto* const list = new std::vector<std::pair<std::string, std::string>>{
      {"t", "h"},     {"th", "e</w>"},   {"a", "n"},      {"an", "d</w>"}, {"i", "n"},     {"in", "g</w>"},
      {"o", "f</w>"}, {"o", "n</w>"},    {"e", "r"},      {"a", "t</w>"},  {"p", "h"},     {"ph", "o"},
      {"pho", "t"},   {"phot", "o</w>"}, {"c", "at</w>"}, {"o", "r"},      {"e", "d</w>"}, {"i", "s</w>"}};
  return *list;
}

// The byte symbols in CLIP's vocabulary order: bytes_to_unicode's, which
// lists the printable bytes first; that is the order of their symbols.
std::vector<std::string> byte_symbols() {
  std::vector<std::pair<char32_t, std::string>> symbols;
  for (int b = 0; b < 256; ++b) {
    symbols.emplace_back(byte_to_symbol(static_cast<uint8_t>(b)),
                         bytes_to_symbols(std::string(1, static_cast<char>(b))));
  }
  std::sort(symbols.begin(), symbols.end());
  std::vector<std::string> out;
  for (auto& [unused, symbol] : symbols) out.push_back(std::move(symbol));
  return out;
}

int32_t start_of_text_id() { return 512 + static_cast<int32_t>(merges().size()); }

// The config as save_pretrained writes it: the parser's fields, and token
// ids and a dtype it does not read.
std::string clip_text_config_json(const ClipTextConfig& config) {
  nlohmann::json j = to_json(config);
  j["attention_dropout"] = 0.0;
  j["bos_token_id"] = 0;
  j["pad_token_id"] = 1;
  j["torch_dtype"] = "bfloat16";
  return j.dump(2) + "\n";
}

json added_token(const char* content) {
  return {{"content", content}, {"lstrip", false},      {"normalized", true},
          {"rstrip", false},    {"single_word", false}, {"special", true}};
}

}  // namespace

int64_t clip_tokenizer_id_limit() { return start_of_text_id() + 2; }

ClipTextConfig demo_clip_text_config() {
  ClipTextConfig c;
  c.vocab_size = clip_tokenizer_id_limit();
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.projection_dim = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.max_position_embeddings = 77;
  c.hidden_act = ClipActivation::kQuickGelu;
  c.eos_token_id = 2;
  return c;
}

absl::Status write_random_clip_text_encoder(const std::string& dir, const ClipTextConfig& config, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/config.json", clip_text_config_json(config)));
  return write_random_weights(dir + "/model.safetensors", clip_parameter_table(config), seed);
}

absl::Status write_clip_tokenizer(const std::string& dir) {
  json vocab = json::object();
  const std::vector<std::string> symbols = byte_symbols();
  for (size_t i = 0; i < symbols.size(); ++i) vocab[symbols[i]] = static_cast<int32_t>(i);
  for (size_t i = 0; i < symbols.size(); ++i) vocab[symbols[i] + "</w>"] = static_cast<int32_t>(256 + i);
  std::string merges_txt = "#version: 0.2\n";
  int32_t id = 512;
  for (const auto& [left, right] : merges()) {
    vocab[left + right] = id++;
    merges_txt += left + " " + right + "\n";
  }
  vocab["<|startoftext|>"] = start_of_text_id();
  vocab["<|endoftext|>"] = start_of_text_id() + 1;
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/vocab.json", vocab.dump() + "\n"));
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/merges.txt", merges_txt));

  json config;
  config["added_tokens_decoder"] = {{std::to_string(start_of_text_id()), added_token("<|startoftext|>")},
                                    {std::to_string(start_of_text_id() + 1), added_token("<|endoftext|>")}};
  config["bos_token"] = "<|startoftext|>";
  config["clean_up_tokenization_spaces"] = false;
  config["eos_token"] = "<|endoftext|>";
  config["errors"] = "replace";
  config["model_max_length"] = 77;
  config["pad_token"] = "<|endoftext|>";
  config["tokenizer_class"] = "CLIPTokenizer";
  config["unk_token"] = "<|endoftext|>";
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(dir + "/tokenizer_config.json", config.dump(2) + "\n"));
  json special;
  special["bos_token"] = "<|startoftext|>";
  special["eos_token"] = "<|endoftext|>";
  special["pad_token"] = "<|endoftext|>";
  special["unk_token"] = "<|endoftext|>";
  return write_text_file(dir + "/special_tokens_map.json", special.dump(2) + "\n");
}

}  // namespace diffusiond
