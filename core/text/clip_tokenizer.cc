#include "core/text/clip_tokenizer.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/text/byte_level.h"
#include "core/text/clip_text_cleaning.h"
#include "core/text/pretokenizer.h"
#include "core/text/unicode.h"
#include "core/util/status_macros.h"
#include "core/util/utf8.h"

namespace diffusiond {
namespace {

// The pieces the reference's BPE cache is seeded with: they map to
// themselves, whatever the configured bos and eos are.
constexpr absl::string_view kCachedPieces[] = {"<|startoftext|>", "<|endoftext|>"};

// Python's str.strip(): white space as str.isspace() has it.
absl::string_view strip_python_space(absl::string_view text) {
  const std::vector<CodePoint> points = decode_utf8(text);
  const auto space = [](char32_t c) { return is_white_space(c) || (c >= 0x1C && c <= 0x1F); };
  size_t first = 0, last = points.size();
  while (first < last && space(points[first].value)) ++first;
  while (last > first && space(points[last - 1].value)) --last;
  const size_t from = first < points.size() ? points[first].offset : text.size();
  const size_t to = last < points.size() ? points[last].offset : text.size();
  return text.substr(from, to - from);
}

// PreTrainedTokenizerBase.clean_up_tokenization: the replacements run in
// this order, each over the result of the previous one.
std::string clean_up_tokenization(std::string text) {
  constexpr std::pair<absl::string_view, absl::string_view> kReplacements[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kReplacements) text = absl::StrReplaceAll(text, {{from, to}});
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClipTokenizer>> ClipTokenizer::create(const ClipTokenizerSpec& spec) {
  const TokenizerSpec& files = spec.bpe;
  DIFFUSIOND_ASSIGN_OR_RETURN(BpeModel bpe,
                              BpeModel::create(files.vocab, files.merges, files.source, kClipEndOfWordSuffix));
  DIFFUSIOND_ASSIGN_OR_RETURN(AddedTokenSplitter added, AddedTokenSplitter::create(files.added_tokens, files.source));
  int32_t id_limit = bpe.id_limit();
  for (const AddedToken& token : added.tokens()) {
    // An added token listed in the vocabulary too must agree about its id.
    const std::string* in_vocab = bpe.token(token.id);
    if (in_vocab != nullptr && *in_vocab != token.content) {
      return absl::InvalidArgumentError(absl::StrCat(files.source, ": added token '", token.content, "' has id ",
                                                     token.id, ", which the vocabulary gives to '", *in_vocab, "'"));
    }
    id_limit = std::max(id_limit, token.id + 1);
  }
  std::unique_ptr<ClipTokenizer> tokenizer(new ClipTokenizer(files.source, std::move(bpe), std::move(added)));
  tokenizer->id_limit_ = id_limit;
  tokenizer->model_max_length_ = spec.model_max_length;
  tokenizer->clean_up_tokenization_spaces_ = spec.clean_up_tokenization_spaces;
  const std::string pad = files.pad_token.empty() ? "<|endoftext|>" : files.pad_token;
  for (const auto& [role, name, id] : {std::make_tuple("bos", &spec.bos_token, &tokenizer->bos_id_),
                                       std::make_tuple("eos", &spec.eos_token, &tokenizer->eos_id_),
                                       std::make_tuple("pad", &pad, &tokenizer->pad_id_)}) {
    *id = tokenizer->token_to_id(*name);
    if (*id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(files.source, ": ", role, " token '", *name,
                                                     "' is neither an added token nor in the vocabulary"));
    }
  }
  tokenizer->unk_id_ = tokenizer->token_to_id(spec.unk_token);
  return tokenizer;
}

absl::StatusOr<std::vector<int32_t>> ClipTokenizer::encode(absl::string_view text) const {
  DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(text, "text to tokenize"));
  std::vector<int32_t> ids;
  for (const TextSegment& segment : added_.split(text)) {
    if (segment.added_id >= 0) {
      ids.push_back(segment.added_id);
    } else {
      DIFFUSIOND_RETURN_IF_ERROR(encode_plain(segment.text, &ids));
    }
  }
  return ids;
}

absl::Status ClipTokenizer::encode_plain(absl::string_view text, std::vector<int32_t>* ids) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::string cleaned, clean_clip_text(text));
  for (const std::string& piece : split_clip_pieces(cleaned)) {
    if (std::find(std::begin(kCachedPieces), std::end(kCachedPieces), piece) != std::end(kCachedPieces)) {
      // The reference looks the cached token up as any token: added, then
      // vocabulary, then unk. Files that have neither keep its BPE.
      const int32_t id = token_to_id(piece) >= 0 ? token_to_id(piece) : unk_id_;
      if (id >= 0) {
        ids->push_back(id);
        continue;
      }
    }
    const std::vector<int32_t> piece_ids = bpe_.encode_piece(piece);
    ids->insert(ids->end(), piece_ids.begin(), piece_ids.end());
  }
  return absl::OkStatus();
}

std::vector<int32_t> ClipTokenizer::with_special_tokens(std::vector<int32_t> ids) const {
  ids.insert(ids.begin(), bos_id_);
  ids.push_back(eos_id_);
  return ids;
}

absl::StatusOr<std::string> ClipTokenizer::decode(absl::Span<const int32_t> ids) const {
  // The reference decodes runs of tokens together and puts the contents of
  // added tokens that are not special between them, joined by spaces.
  std::vector<std::string> parts;
  std::string symbols;
  bool run = false;
  const auto flush = [&](bool keep_empty) {
    std::string bytes;
    for (const CodePoint& point : decode_utf8(symbols)) {
      // A code point that stands for no byte passes through as its UTF-8.
      const int byte = symbol_to_byte(point.value);
      if (byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
      } else {
        append_utf8(point.value, &bytes);
      }
    }
    const std::string text = absl::StrReplaceAll(decode_utf8_lossy(bytes), {{std::string(kClipEndOfWordSuffix), " "}});
    const absl::string_view stripped = strip_python_space(text);
    if (keep_empty || !stripped.empty()) parts.emplace_back(stripped);
    symbols.clear();
    run = false;
  };
  for (size_t i = 0; i < ids.size(); ++i) {
    const AddedToken* added = added_.find(ids[i]);
    if (added != nullptr && !added->special) {
      if (run) flush(/*keep_empty=*/false);
      parts.push_back(added->content);
      continue;
    }
    const std::string* token = added != nullptr ? &added->content : bpe_.token(ids[i]);
    if (token == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("decode: id ", ids[i], " at position ", i, " is not in the vocabulary of ", source_));
    }
    symbols += *token;
    run = true;
  }
  if (run) flush(/*keep_empty=*/true);
  std::string text = absl::StrJoin(parts, " ");
  return clean_up_tokenization_spaces_ ? clean_up_tokenization(std::move(text)) : text;
}

int32_t ClipTokenizer::token_to_id(absl::string_view token) const {
  for (const AddedToken& added : added_.tokens()) {
    if (added.content == token) return added.id;
  }
  return bpe_.id(token);
}

const std::string* ClipTokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* added = added_.find(id); added != nullptr) return &added->content;
  return bpe_.token(id);
}

}  // namespace diffusiond
