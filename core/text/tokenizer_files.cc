#include "core/text/tokenizer_files.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using nlohmann::json;

// Real vocabularies run to a few MB (Qwen's tokenizer.json is about 11 MB).
constexpr int64_t kMaxTokenizerFileBytes = int64_t{256} << 20;

// The only pre-tokenizer regex the scanner in pretokenizer.h implements.
constexpr absl::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Reads and parses a JSON file whose top level must be an object. A file
// that cannot be read is a bad tokenizer folder: INVALID_ARGUMENT.
absl::StatusOr<json> read_json_object(absl::string_view path) {
  absl::StatusOr<std::string> text = read_text_file(path, kMaxTokenizerFileBytes);
  if (!text.ok()) return absl::InvalidArgumentError(std::string(text.status().message()));
  DIFFUSIOND_ASSIGN_OR_RETURN(json root, parse_json_strict(*text, path));
  if (!root.is_object()) return bad_file(path, "expected a JSON object at the top level");
  return root;
}

// Reads {"token": id, ...}; `where` names the object within the file.
absl::StatusOr<std::vector<std::pair<std::string, int32_t>>> read_vocab(const json& vocab,
                                                                     absl::string_view path,
                                                                     absl::string_view where) {
  if (!vocab.is_object()) return bad_file(path, absl::StrCat(where, " is not an object of token -> id"));
  std::vector<std::pair<std::string, int32_t>> out;
  out.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return bad_file(path, absl::StrCat(where, " token '", token, "' has id ", id.dump(),
                                    "; expected an integer in [0, 2^31)"));
    }
    out.emplace_back(token, static_cast<int32_t>(id.get<int64_t>()));
  }
  return out;
}

// Returns `field` of `object` as a bool: absent or null is false.
absl::StatusOr<bool> optional_bool(const json& object, const char* field, absl::string_view path,
                                   absl::string_view where) {
  const auto it = object.find(field);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) return bad_file(path, absl::StrCat(where, ".", field, " is not a boolean"));
  return it->get<bool>();
}

// Reads one added token object ({"content": ..., "special": ...}).
absl::StatusOr<AddedToken> read_added_token(const json& entry, int64_t id, absl::string_view path,
                                            absl::string_view where) {
  if (!entry.is_object()) return bad_file(path, absl::StrCat(where, " is not an object"));
  const auto content = entry.find("content");
  if (content == entry.end() || !content->is_string()) {
    return bad_file(path, absl::StrCat(where, " has no string 'content'"));
  }
  if (id < 0 || id > INT32_MAX) return bad_file(path, absl::StrCat(where, " has id ", id, "; expected [0, 2^31)"));
  AddedToken token{static_cast<int32_t>(id), content->get<std::string>(), false};
  DIFFUSIOND_ASSIGN_OR_RETURN(token.special, optional_bool(entry, "special", path, where));
  for (const char* unsupported : {"lstrip", "rstrip", "single_word"}) {
    DIFFUSIOND_ASSIGN_OR_RETURN(const bool set, optional_bool(entry, unsupported, path, where));
    if (set) {
      return bad_file(path, absl::StrCat("added token '", token.content, "' sets ", unsupported,
                                    ", which this tokenizer does not implement"));
    }
  }
  return token;
}

// A token as tokenizer_config.json names it: a string, null, or an
// AddedToken object with "content".
absl::StatusOr<std::string> read_token_name(const json& config, const char* field, absl::string_view path) {
  const auto it = config.find(field);
  if (it == config.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return bad_file(path, absl::StrCat(field, " is neither a string, null, nor an object with 'content'"));
}

// The model of tokenizer.json: plain byte-level BPE with the expected word
// suffix (empty: none).
absl::Status check_bpe_model(const json& root, absl::string_view path, absl::string_view end_of_word_suffix) {
  const json& model = root["model"];
  if (model.contains("type") && model["type"] != "BPE") {
    return bad_file(path, absl::StrCat("model.type is ", model["type"].dump(), "; expected \"BPE\""));
  }
  for (const char* field : {"byte_fallback", "ignore_merges"}) {
    DIFFUSIOND_ASSIGN_OR_RETURN(const bool set, optional_bool(model, field, path, "model"));
    if (set) return bad_file(path, absl::StrCat("model.", field, " is true; only plain byte-level BPE is implemented"));
  }
  const char* prefix = "continuing_subword_prefix";
  if (model.contains(prefix) && !model[prefix].is_null() && model[prefix] != "") {
    return bad_file(path, absl::StrCat("model.", prefix, " is ", model[prefix].dump(), "; expected none"));
  }
  const char* suffix = "end_of_word_suffix";
  const json given = model.contains(suffix) && !model[suffix].is_null() ? model[suffix] : json("");
  if (given != json(std::string(end_of_word_suffix))) {
    return bad_file(path, absl::StrCat("model.", suffix, " is ", given.dump(), "; expected ",
                                  end_of_word_suffix.empty() ? "none" : json(std::string(end_of_word_suffix)).dump()));
  }
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0) {
    return bad_file(path, "model.dropout is set; tokenizing must be deterministic");
  }
  return absl::OkStatus();
}

absl::Status check_qwen2_pipeline(const json& root, absl::string_view path) {
  const json normalizer = root.value("normalizer", json());
  if (!normalizer.is_object() || normalizer.value("type", "") != "NFC") {
    return bad_file(path, absl::StrCat("normalizer is ", normalizer.dump(), "; expected {\"type\": \"NFC\"}"));
  }
  // Split(Qwen2 regex, Isolated) then ByteLevel without its own regex.
  const json pre = root.value("pre_tokenizer", json());
  const json steps = pre.is_object() ? pre.value("pretokenizers", json()) : json();
  const bool qwen2 =
      pre.is_object() && pre.value("type", "") == "Sequence" && steps.is_array() && steps.size() == 2 &&
      steps[0].is_object() && steps[0].value("type", "") == "Split" &&
      steps[0].value("pattern", json()).is_object() &&
      steps[0]["pattern"].value("Regex", "") == kQwen2Pattern &&
      steps[0].value("behavior", "") == "Isolated" && !steps[0].value("invert", false) &&
      steps[1].is_object() && steps[1].value("type", "") == "ByteLevel" &&
      !steps[1].value("use_regex", true) && !steps[1].value("add_prefix_space", false);
  if (!qwen2) {
    return bad_file(path, "pre_tokenizer is not Qwen2's Sequence[Split(Qwen2 regex, Isolated), "
                     "ByteLevel(use_regex=false, add_prefix_space=false)]");
  }
  return absl::OkStatus();
}

// Reads tokenizer.json at `path` after `check` (given the parsed root)
// accepts its settings.
template <typename Check>
absl::StatusOr<TokenizerSpec> read_checked_tokenizer_json(absl::string_view path, Check check) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, read_json_object(path));
  if (!root.contains("model") || !root["model"].is_object()) return bad_file(path, "no 'model' object");
  // nlohmann's value() throws on a type mismatch; the checks test types
  // first, but a parse of hostile input must never throw out.
  try {
    DIFFUSIOND_RETURN_IF_ERROR(check(root));
  } catch (const json::exception& e) {
    return bad_file(path, absl::StrCat("unexpected pipeline settings: ", e.what()));
  }
  TokenizerSpec spec;
  spec.source = std::string(path);
  const json& model = root["model"];
  DIFFUSIOND_ASSIGN_OR_RETURN(spec.vocab, read_vocab(model.value("vocab", json()), path, "model.vocab"));
  const json merges = model.value("merges", json());
  if (!merges.is_array()) return bad_file(path, "model.merges is not an array");
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {
      const std::vector<std::string> parts = absl::StrSplit(m.get<std::string>(), ' ');
      if (parts.size() == 2 && !parts[0].empty() && !parts[1].empty()) {
        spec.merges.emplace_back(parts[0], parts[1]);
        continue;
      }
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      continue;
    }
    return bad_file(path, absl::StrCat("model.merges[", i, "] is ", m.dump(),
                                  "; expected \"a b\" or [\"a\", \"b\"]"));
  }
  const json added = root.value("added_tokens", json::array());
  if (!added.is_array()) return bad_file(path, "added_tokens is not an array");
  for (size_t i = 0; i < added.size(); ++i) {
    const std::string where = absl::StrCat("added_tokens[", i, "]");
    const json id = added[i].is_object() ? added[i].value("id", json()) : json();
    if (!id.is_number_integer()) return bad_file(path, absl::StrCat(where, " has no integer 'id'"));
    DIFFUSIOND_ASSIGN_OR_RETURN(AddedToken token, read_added_token(added[i], id.get<int64_t>(), path, where));
    spec.added_tokens.push_back(std::move(token));
  }
  const json padding = root.value("padding", json());
  if (padding.is_object() && padding.value("pad_token", json()).is_string()) {
    spec.pad_token = padding["pad_token"].get<std::string>();
  }
  return spec;
}

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, int32_t>>> read_vocab_json(absl::string_view path) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json vocab, read_json_object(path));
  return read_vocab(vocab, path, "the vocabulary");
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> read_merges_txt(absl::string_view path,
                                                                                const MergesTxtFormat& format) {
  absl::StatusOr<std::string> merges = read_text_file(path, kMaxTokenizerFileBytes);
  if (!merges.ok()) return absl::InvalidArgumentError(std::string(merges.status().message()));
  absl::string_view text = *merges;
  if (format.always_skip_first_line) text = absl::StripLeadingAsciiWhitespace(text);
  std::vector<std::pair<std::string, std::string>> out;
  int64_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line_number == 1 && format.always_skip_first_line) continue;
    if (format.max_lines > 0 && line_number - 1 > format.max_lines) break;
    line = absl::StripAsciiWhitespace(line);
    // As the reference reads it: a "#version:" first line and blank lines
    // are skipped, every other line is two tokens.
    if (line.empty() || (line_number == 1 && absl::StartsWith(line, "#version:"))) continue;
    const std::vector<std::string> parts = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (parts.size() != 2) {
      return bad_file(path, absl::StrCat("line ", line_number, " is '", line, "'; expected two tokens"));
    }
    out.emplace_back(parts[0], parts[1]);
  }
  return out;
}

absl::StatusOr<TokenizerConfig> read_tokenizer_config(absl::string_view path) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json config, read_json_object(path));
  TokenizerConfig out;
  const auto klass = config.find("tokenizer_class");
  if (klass != config.end() && klass->is_string()) out.tokenizer_class = klass->get<std::string>();
  const auto added = config.find("added_tokens_decoder");
  if (added != config.end() && !added->is_null()) {
    if (!added->is_object()) return bad_file(path, "added_tokens_decoder is not an object");
    for (const auto& [key, entry] : added->items()) {
      int64_t id;
      if (!absl::SimpleAtoi(key, &id)) {
        return bad_file(path, absl::StrCat("added_tokens_decoder key '", key, "' is not an id"));
      }
      DIFFUSIOND_ASSIGN_OR_RETURN(AddedToken token,
                                  read_added_token(entry, id, path, absl::StrCat("added_tokens_decoder[", key, "]")));
      out.added_tokens.push_back(std::move(token));
    }
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(out.pad_token, read_token_name(config, "pad_token", path));
  DIFFUSIOND_ASSIGN_OR_RETURN(out.bos_token, read_token_name(config, "bos_token", path));
  DIFFUSIOND_ASSIGN_OR_RETURN(out.eos_token, read_token_name(config, "eos_token", path));
  DIFFUSIOND_ASSIGN_OR_RETURN(out.unk_token, read_token_name(config, "unk_token", path));
  const auto max_length = config.find("model_max_length");
  if (max_length != config.end() && !max_length->is_null()) {
    if (!max_length->is_number() || (max_length->is_number_integer() && max_length->get<int64_t>() < 0 &&
                                      !max_length->is_number_unsigned())) {
      return bad_file(path, absl::StrCat("model_max_length is ", max_length->dump(), "; expected a non-negative number"));
    }
    // Integers that fit; a float or a larger integer is transformers'
    // VERY_LARGE_INTEGER, no limit.
    if (max_length->is_number_unsigned()) {
      const uint64_t v = max_length->get<uint64_t>();
      out.model_max_length = v <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(v) : 0;
    } else if (max_length->is_number_integer()) {
      out.model_max_length = max_length->get<int64_t>();
    }
  }
  const auto clean_up = config.find("clean_up_tokenization_spaces");
  if (clean_up != config.end() && !clean_up->is_null()) {
    if (!clean_up->is_boolean()) {
      return bad_file(path, absl::StrCat("clean_up_tokenization_spaces is ", clean_up->dump(), "; expected a boolean"));
    }
    out.clean_up_tokenization_spaces = clean_up->get<bool>();
  }
  return out;
}

absl::StatusOr<TokenizerSpec> read_tokenizer_json(absl::string_view path) {
  return read_checked_tokenizer_json(path, [&](const json& root) -> absl::Status {
    DIFFUSIOND_RETURN_IF_ERROR(check_bpe_model(root, path, ""));
    return check_qwen2_pipeline(root, path);
  });
}

absl::StatusOr<TokenizerSpec> read_tokenizer_json_model(absl::string_view path,
                                                        absl::string_view end_of_word_suffix) {
  return read_checked_tokenizer_json(
      path, [&](const json& root) { return check_bpe_model(root, path, end_of_word_suffix); });
}

absl::StatusOr<TokenizerSpec> read_vocab_and_merges(absl::string_view vocab_path,
                                                    absl::string_view merges_path,
                                                    absl::string_view config_path) {
  TokenizerSpec spec;
  spec.source = absl::StrCat(vocab_path, " + ", merges_path);
  DIFFUSIOND_ASSIGN_OR_RETURN(spec.vocab, read_vocab_json(vocab_path));
  DIFFUSIOND_ASSIGN_OR_RETURN(spec.merges, read_merges_txt(merges_path, MergesTxtFormat()));
  DIFFUSIOND_ASSIGN_OR_RETURN(TokenizerConfig config, read_tokenizer_config(config_path));
  const std::string& klass = config.tokenizer_class;
  if (!klass.empty() && klass != "Qwen2Tokenizer" && klass != "Qwen2TokenizerFast") {
    return bad_file(config_path, absl::StrCat("tokenizer_class is ", json(klass).dump(), "; expected Qwen2Tokenizer"));
  }
  spec.added_tokens = std::move(config.added_tokens);
  spec.pad_token = std::move(config.pad_token);
  return spec;
}

absl::StatusOr<std::unique_ptr<BpeTokenizer>> load_tokenizer(absl::string_view dir) {
  const std::filesystem::path folder{std::string(dir)};
  const std::string config = (folder / "tokenizer_config.json").string();
  TokenizerSpec spec;
  if (std::filesystem::exists(folder / "tokenizer.json")) {
    DIFFUSIOND_ASSIGN_OR_RETURN(spec, read_tokenizer_json((folder / "tokenizer.json").string()));
    if (std::filesystem::exists(config)) {
      DIFFUSIOND_ASSIGN_OR_RETURN(const json root, read_json_object(config));
      DIFFUSIOND_ASSIGN_OR_RETURN(std::string pad, read_token_name(root, "pad_token", config));
      if (!pad.empty()) spec.pad_token = std::move(pad);
    }
  } else {
    DIFFUSIOND_ASSIGN_OR_RETURN(spec, read_vocab_and_merges((folder / "vocab.json").string(),
                                                            (folder / "merges.txt").string(), config));
  }
  return BpeTokenizer::create(spec);
}

}  // namespace diffusiond
