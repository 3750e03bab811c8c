#include "core/text/sentencepiece_files.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using nlohmann::json;

// umt5-xxl's spiece.model (256,000 pieces) is about 4.5 MB; its
// tokenizer_config.json, with 300 sentinels spelled out, well under 1 MB.
constexpr int64_t kMaxModelBytes = int64_t{64} << 20;
constexpr int64_t kMaxJsonBytes = int64_t{64} << 20;
constexpr int64_t kMaxExtraIds = int64_t{1} << 20;

// The special-token attributes, in transformers' SPECIAL_TOKENS_ATTRIBUTES
// order, and where each lives in the spec.
struct Attribute {
  const char* name;
  std::string SentencePieceTokenizerSpec::*field;
};
constexpr Attribute kAttributes[] = {
    {"bos_token", &SentencePieceTokenizerSpec::bos_token}, {"eos_token", &SentencePieceTokenizerSpec::eos_token},
    {"unk_token", &SentencePieceTokenizerSpec::unk_token}, {"sep_token", &SentencePieceTokenizerSpec::sep_token},
    {"pad_token", &SentencePieceTokenizerSpec::pad_token}, {"cls_token", &SentencePieceTokenizerSpec::cls_token},
    {"mask_token", &SentencePieceTokenizerSpec::mask_token}};

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// The JSON object in `path`, or nothing when the file is absent.
absl::StatusOr<std::optional<json>> read_optional_object(const std::string& path) {
  if (!exists(path)) return std::optional<json>();
  absl::StatusOr<std::string> text = read_text_file(path, kMaxJsonBytes);
  if (!text.ok()) return absl::InvalidArgumentError(std::string(text.status().message()));
  DIFFUSIOND_ASSIGN_OR_RETURN(json root, parse_json_strict(*text, path));
  if (!root.is_object()) return bad_file(path, "expected a JSON object at the top level");
  return std::optional<json>(std::move(root));
}

// A token as the files spell it: a string, or an AddedToken object with a
// string "content". Null is no token: "".
absl::StatusOr<std::string> token_content(const json& value, const std::string& path, absl::string_view where) {
  if (value.is_null()) return std::string();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value.at("content").is_string()) {
    return value.at("content").get<std::string>();
  }
  return json_field_error(path, where, value, "a string, an object with a string \"content\", or null");
}

absl::StatusOr<std::vector<std::string>> token_list(const json& value, const std::string& path,
                                                    absl::string_view where) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  if (!value.is_array()) return json_field_error(path, where, value, "a list of tokens");
  for (const json& entry : value) {
    DIFFUSIOND_ASSIGN_OR_RETURN(std::string content, token_content(entry, path, where));
    if (!content.empty()) out.push_back(std::move(content));
  }
  return out;
}

absl::StatusOr<bool> entry_flag(const json& entry, const char* flag, const std::string& path,
                                absl::string_view where) {
  bool value = false;
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(entry, flag, absl::StrCat(path, ": ", where), &value));
  return value;
}

// tokenizer_config.json's added_tokens_decoder: {"<id>": {"content", "lstrip", ...}}.
absl::StatusOr<std::vector<SentencePieceAddedToken>> read_added_tokens_decoder(const json& decoder,
                                                                                const std::string& path) {
  if (!decoder.is_object()) {
    return json_field_error(path, "added_tokens_decoder", decoder, "an object of id -> token");
  }
  std::vector<SentencePieceAddedToken> out;
  for (const auto& [key, entry] : decoder.items()) {
    const std::string where = absl::StrCat("added_tokens_decoder[\"", key, "\"]");
    int64_t id = -1;
    if (!absl::SimpleAtoi(key, &id) || id < 0 || id > INT32_MAX) {
      return bad_file(path, absl::StrCat(where, ": the key is not an id in [0, 2^31)"));
    }
    if (!entry.is_object() || !entry.contains("content") || !entry.at("content").is_string()) {
      return bad_file(path, absl::StrCat(where, " has no string 'content'"));
    }
    SentencePieceAddedToken token;
    token.id = static_cast<int32_t>(id);
    token.content = entry.at("content").get<std::string>();
    DIFFUSIOND_ASSIGN_OR_RETURN(token.special, entry_flag(entry, "special", path, where));
    DIFFUSIOND_ASSIGN_OR_RETURN(token.lstrip, entry_flag(entry, "lstrip", path, where));
    DIFFUSIOND_ASSIGN_OR_RETURN(token.rstrip, entry_flag(entry, "rstrip", path, where));
    DIFFUSIOND_ASSIGN_OR_RETURN(const bool single_word, entry_flag(entry, "single_word", path, where));
    if (single_word) {
      return bad_file(path, absl::StrCat(where, " ('", token.content, "') has single_word, which is not supported"));
    }
    out.push_back(std::move(token));
  }
  return out;
}

// The settings of tokenizer_config.json. Sets `*has_decoder` when it lists
// the added tokens itself.
absl::Status read_config(const json& root, const std::string& path, SentencePieceTokenizerSpec* spec,
                         bool* has_decoder) {
  if (root.contains("tokenizer_class") && !root.at("tokenizer_class").is_null()) {
    const json& cls = root.at("tokenizer_class");
    if (cls != json("T5Tokenizer") && cls != json("T5TokenizerFast")) {
      return json_field_error(path, "tokenizer_class", cls, "\"T5Tokenizer\" or \"T5TokenizerFast\"");
    }
  }
  if (root.contains("sp_model_kwargs") && !root.at("sp_model_kwargs").is_null() &&
      !(root.at("sp_model_kwargs").is_object() && root.at("sp_model_kwargs").empty())) {
    return json_field_error(path, "sp_model_kwargs", root.at("sp_model_kwargs"),
                            "{} (sampling and other sentencepiece options are not supported)");
  }
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "legacy", path, &spec->legacy));
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "add_prefix_space", path, &spec->add_prefix_space));
  DIFFUSIOND_RETURN_IF_ERROR(
      read_json_field(root, "clean_up_tokenization_spaces", path, &spec->clean_up_tokenization_spaces));
  DIFFUSIOND_RETURN_IF_ERROR(read_json_field(root, "extra_ids", path, &spec->extra_ids));
  if (spec->extra_ids < 0 || spec->extra_ids > kMaxExtraIds) {
    return json_field_error(path, "extra_ids", root.at("extra_ids"),
                            absl::StrCat("an integer in [0, ", kMaxExtraIds, "]"));
  }
  for (const Attribute& a : kAttributes) {
    if (!root.contains(a.name)) continue;
    DIFFUSIOND_ASSIGN_OR_RETURN(spec->*a.field, token_content(root.at(a.name), path, a.name));
  }
  if (root.contains("additional_special_tokens")) {
    DIFFUSIOND_ASSIGN_OR_RETURN(spec->additional_special_tokens,
                                token_list(root.at("additional_special_tokens"), path, "additional_special_tokens"));
  }
  *has_decoder = root.contains("added_tokens_decoder") && !root.at("added_tokens_decoder").is_null();
  if (*has_decoder) {
    DIFFUSIOND_ASSIGN_OR_RETURN(spec->added_tokens, read_added_tokens_decoder(root.at("added_tokens_decoder"), path));
  }
  return absl::OkStatus();
}

// The older layout: special_tokens_map.json overrides the config's special
// tokens (its additional ones join the config's), and added_tokens.json
// lists content -> id, stripping nothing.
absl::Status read_legacy_files(const std::string& dir, SentencePieceTokenizerSpec* spec) {
  const std::string map_path = dir + "/special_tokens_map.json";
  DIFFUSIOND_ASSIGN_OR_RETURN(std::optional<json> map, read_optional_object(map_path));
  if (map.has_value()) {
    for (const Attribute& a : kAttributes) {
      if (!map->contains(a.name)) continue;
      DIFFUSIOND_ASSIGN_OR_RETURN(spec->*a.field, token_content(map->at(a.name), map_path, a.name));
    }
    if (map->contains("additional_special_tokens")) {
      DIFFUSIOND_ASSIGN_OR_RETURN(
          std::vector<std::string> more,
          token_list(map->at("additional_special_tokens"), map_path, "additional_special_tokens"));
      std::vector<std::string> merged = spec->additional_special_tokens.value_or(std::vector<std::string>());
      for (std::string& t : more) {
        if (std::find(merged.begin(), merged.end(), t) == merged.end()) merged.push_back(std::move(t));
      }
      spec->additional_special_tokens = std::move(merged);
    }
  }
  const std::string added_path = dir + "/added_tokens.json";
  DIFFUSIOND_ASSIGN_OR_RETURN(std::optional<json> added, read_optional_object(added_path));
  if (!added.has_value()) return absl::OkStatus();
  std::vector<std::string> specials = spec->additional_special_tokens.value_or(std::vector<std::string>());
  for (const Attribute& a : kAttributes) specials.push_back(spec->*a.field);
  for (const auto& [content, id] : added->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return bad_file(added_path,
                 absl::StrCat("token '", content, "' has id ", id.dump(), "; expected an integer in [0, 2^31)"));
    }
    const bool special = std::find(specials.begin(), specials.end(), content) != specials.end();
    spec->added_tokens.push_back({static_cast<int32_t>(id.get<int64_t>()), content, special, false, false});
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SentencePieceTokenizerSpec> read_sentencepiece_spec(absl::string_view dir_view) {
  const std::string dir(dir_view);
  const std::string model_path = dir + "/spiece.model";
  if (!exists(model_path)) {
    if (exists(dir + "/tokenizer.json")) {
      return bad_file(dir + "/tokenizer.json",
                 "a T5 tokenizer is read from spiece.model, which this folder lacks (tokenizer.json alone is "
                 "not supported; FLUX.1 and Wan ship spiece.model beside it)");
    }
    return bad_file(model_path, "not found (a T5 tokenizer folder needs spiece.model)");
  }
  SentencePieceTokenizerSpec spec;
  spec.source = model_path;
  absl::StatusOr<std::string> model = read_text_file(model_path, kMaxModelBytes);
  if (!model.ok()) return absl::InvalidArgumentError(std::string(model.status().message()));
  spec.model = std::move(*model);

  const std::string config_path = dir + "/tokenizer_config.json";
  DIFFUSIOND_ASSIGN_OR_RETURN(std::optional<json> config, read_optional_object(config_path));
  bool has_decoder = false;
  if (config.has_value()) {
    DIFFUSIOND_RETURN_IF_ERROR(read_config(*config, config_path, &spec, &has_decoder));
    spec.source = absl::StrCat(model_path, " + tokenizer_config.json");
  }
  if (!has_decoder) DIFFUSIOND_RETURN_IF_ERROR(read_legacy_files(dir, &spec));
  return spec;
}

absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> load_sentencepiece_tokenizer(absl::string_view dir) {
  DIFFUSIOND_ASSIGN_OR_RETURN(SentencePieceTokenizerSpec spec, read_sentencepiece_spec(dir));
  return SentencePieceTokenizer::create(spec);
}

absl::StatusOr<FoundTokenizer> find_sentencepiece_tokenizer(const std::vector<std::string>& folders) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& folder : folders) {
    if (!fs::exists(fs::path(folder) / "spiece.model", ec) && !fs::exists(fs::path(folder) / "tokenizer.json", ec)) {
      continue;
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<SentencePieceTokenizer> tokenizer, load_sentencepiece_tokenizer(folder));
    return FoundTokenizer{std::move(tokenizer), absl::StrCat("tokenizer from ", folder)};
  }
  return FoundTokenizer{nullptr, "no tokenizer found"};
}

}  // namespace diffusiond
