#include "core/text/bpe_tokenizer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/text/byte_level.h"
#include "core/text/pretokenizer.h"
#include "core/text/unicode.h"
#include "core/util/utf8.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(const TokenizerSpec& spec) {
  DIFFUSIOND_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::create(spec.vocab, spec.merges, spec.source));
  DIFFUSIOND_ASSIGN_OR_RETURN(AddedTokenSplitter added,
                              AddedTokenSplitter::create(spec.added_tokens, spec.source));
  int32_t id_limit = bpe.id_limit();
  for (const AddedToken& token : added.tokens()) {
    // Files may list an added token in the vocabulary too; it must then
    // agree with the vocabulary about its id.
    const std::string* in_vocab = bpe.token(token.id);
    if (in_vocab != nullptr && *in_vocab != token.content) {
      return absl::InvalidArgumentError(absl::StrCat(spec.source, ": added token '", token.content,
                                                     "' has id ", token.id, ", which the vocabulary gives to '",
                                                     *in_vocab, "'"));
    }
    id_limit = std::max(id_limit, token.id + 1);
  }
  std::unique_ptr<BpeTokenizer> tokenizer(new BpeTokenizer(spec.source, std::move(bpe), std::move(added)));
  tokenizer->id_limit_ = id_limit;
  if (!spec.pad_token.empty()) {
    tokenizer->pad_id_ = tokenizer->token_to_id(spec.pad_token);
    if (tokenizer->pad_id_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat(spec.source, ": pad token '", spec.pad_token,
                                                     "' is neither an added token nor in the vocabulary"));
    }
  }
  return tokenizer;
}

absl::StatusOr<std::vector<int32_t>> BpeTokenizer::encode(absl::string_view text) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::string normalized, nfc_normalize(text, "text to tokenize"));
  std::vector<int32_t> ids;
  for (const TextSegment& segment : added_.split(normalized)) {
    if (segment.added_id >= 0) {
      ids.push_back(segment.added_id);
      continue;
    }
    for (const std::string& piece : split_qwen2_pieces(segment.text)) {
      const std::vector<int32_t> piece_ids = bpe_.encode_piece(piece);
      ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
  }
  return ids;
}

absl::StatusOr<std::string> BpeTokenizer::decode(absl::Span<const int32_t> ids) const {
  std::string text;
  std::string bytes;  // the current run of BPE tokens, as raw bytes
  for (size_t i = 0; i < ids.size(); ++i) {
    if (const AddedToken* added = added_.find(ids[i]); added != nullptr) {
      text += decode_utf8_lossy(bytes);
      bytes.clear();
      text += added->content;
      continue;
    }
    const std::string* token = bpe_.token(ids[i]);
    if (token == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("decode: id ", ids[i], " at position ", i,
                                                     " is not in the vocabulary of ", source_));
    }
    // A code point that stands for no byte (in a vocabulary that lists a
    // token like "<|endoftext|>" itself) passes through as its UTF-8.
    for (const CodePoint& point : decode_utf8(*token)) {
      const int byte = symbol_to_byte(point.value);
      if (byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
      } else {
        append_utf8(point.value, &bytes);
      }
    }
  }
  text += decode_utf8_lossy(bytes);
  return text;
}

int32_t BpeTokenizer::token_to_id(absl::string_view token) const {
  for (const AddedToken& added : added_.tokens()) {
    if (added.content == token) return added.id;
  }
  return bpe_.id(token);
}

const std::string* BpeTokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* added = added_.find(id); added != nullptr) return &added->content;
  return bpe_.token(id);
}

}  // namespace diffusiond
