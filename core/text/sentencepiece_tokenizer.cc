#include "core/text/sentencepiece_tokenizer.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/util/file_text.h"
#include "core/util/utf8.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kMetaSpace = "\xE2\x96\x81";  // U+2581, sentencepiece's "▁"

// Python's str.isspace(): bidirectional class WS, B or S, or category Zs.
// (Not U+200B, which is Cf.)
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Python's s.lstrip() (`left`) and s.rstrip() (`right`). Bytes that are not
// UTF-8 (none reach here from the library's decode, which replaces them)
// are left alone.
std::string python_strip(absl::string_view s, bool left, bool right) {
  if (!validate_utf8(s, "").ok()) return std::string(s);
  const std::vector<CodePoint> points = decode_utf8(s);
  size_t begin = 0, end = points.size();
  while (left && begin < end && is_python_space(points[begin].value)) ++begin;
  while (right && end > begin && is_python_space(points[end - 1].value)) --end;
  const size_t from = begin < points.size() ? points[begin].offset : s.size();
  const size_t to = end < points.size() ? points[end].offset : s.size();
  return std::string(s.substr(from, to - from));
}

// transformers' clean_up_tokenization, one replacement after another.
std::string clean_up_tokenization(std::string text) {
  for (const auto& [from, to] : std::vector<std::pair<const char*, const char*>>{
           {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
           {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}}) {
    text = absl::StrReplaceAll(text, {{from, to}});
  }
  return text;
}

// T5Tokenizer's own entries for the sentinels the files name (or its
// extra_ids default), before the files' added tokens override them.
absl::Status sentinel_entries(const SentencePieceTokenizerSpec& spec, int32_t pieces,
                              std::vector<std::string>* additional, std::vector<SentencePieceAddedToken>* out) {
  int64_t named = spec.extra_ids;
  if (spec.additional_special_tokens.has_value()) {
    *additional = *spec.additional_special_tokens;
    named = std::count_if(additional->begin(), additional->end(),
                          [](const std::string& t) { return absl::StrContains(t, "<extra_id_"); });
    if (named == 0) {
      // Appended as special tokens after every known id, not at T5's places.
      for (int64_t i = 0; i < spec.extra_ids; ++i) additional->push_back(absl::StrCat("<extra_id_", i, ">"));
    } else if (spec.extra_ids > 0 && spec.extra_ids != named) {
      return bad_file(spec.source, absl::StrCat("extra_ids is ", spec.extra_ids, " but additional_special_tokens names ",
                                           named, " <extra_id_N> sentinels"));
    }
  } else {
    for (int64_t i = 0; i < spec.extra_ids; ++i) additional->push_back(absl::StrCat("<extra_id_", i, ">"));
  }
  for (int64_t i = 0; i < named; ++i) {
    const int64_t id = pieces - 1 + spec.extra_ids - i;
    if (id < 0 || id > INT32_MAX) {
      return bad_file(spec.source, absl::StrCat("sentinel <extra_id_", i, "> lands at id ", id));
    }
    out->push_back({static_cast<int32_t>(id), absl::StrCat("<extra_id_", i, ">"), true, true, true});
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::create(
    const SentencePieceTokenizerSpec& spec) {
  std::string error;
  std::unique_ptr<SentencePieceModel> model = SentencePieceModel::load(spec.model, !spec.legacy, &error);
  if (model == nullptr) {
    return bad_file(spec.source, absl::StrCat("spiece.model is not a usable SentencePiece model: ", error));
  }
  const int32_t pieces = model->size();

  std::vector<std::string> additional;
  std::vector<SentencePieceAddedToken> sentinels;
  DIFFUSIOND_RETURN_IF_ERROR(sentinel_entries(spec, pieces, &additional, &sentinels));
  // By id, as the reference's _added_tokens_decoder: the files' tokens
  // replace T5's sentinel entries (a sentinel they move leaves its old id).
  std::map<int32_t, SentencePieceAddedToken> decoder;
  absl::flat_hash_set<std::string> from_files;
  for (const SentencePieceAddedToken& t : spec.added_tokens) from_files.insert(t.content);
  for (const SentencePieceAddedToken& t : sentinels) {
    if (!from_files.contains(t.content)) decoder[t.id] = t;
  }
  for (const SentencePieceAddedToken& t : spec.added_tokens) {
    if (t.id < 0) return bad_file(spec.source, absl::StrCat("added token '", t.content, "' has negative id ", t.id));
    if (decoder.count(t.id) != 0 && !from_files.contains(decoder[t.id].content)) decoder.erase(t.id);
    if (!decoder.emplace(t.id, t).second) {
      return bad_file(spec.source, absl::StrCat("added token id ", t.id, " appears twice"));
    }
  }

  // Special tokens not added yet join at their piece's id, or after every
  // id the vocabulary knows (the reference's _add_tokens over get_vocab()).
  std::vector<std::string> specials;
  for (const std::string* t : {&spec.bos_token, &spec.eos_token, &spec.unk_token, &spec.sep_token,
                               &spec.pad_token, &spec.cls_token, &spec.mask_token}) {
    if (!t->empty()) specials.push_back(*t);
  }
  specials.insert(specials.end(), additional.begin(), additional.end());
  {
    absl::flat_hash_map<std::string, int32_t> vocab;
    for (int32_t i = 0; i < pieces; ++i) {
      const auto it = decoder.find(i);
      vocab[it != decoder.end() ? it->second.content : model->id_to_piece(i)] = i;
    }
    for (const auto& [id, t] : decoder) vocab[t.content] = id;
    absl::flat_hash_set<std::string> added_contents;
    for (const auto& [id, t] : decoder) added_contents.insert(t.content);
    const int64_t first_new = static_cast<int64_t>(vocab.size());
    int64_t added = 0;
    for (const std::string& s : specials) {
      if (!added_contents.insert(s).second) continue;
      auto it = vocab.find(s);
      if (it == vocab.end()) it = vocab.emplace(s, static_cast<int32_t>(first_new + added++)).first;
      if (!decoder.emplace(it->second, SentencePieceAddedToken{it->second, s, true, false, false}).second) {
        return bad_file(spec.source, absl::StrCat("special token '", s, "' would take id ", it->second,
                                             ", which added token '", decoder[it->second].content, "' has"));
      }
    }
  }

  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  std::vector<AddedToken> plain;
  int32_t id_limit = pieces;
  for (const auto& [id, token] : decoder) {
    plain.push_back({id, token.content, token.special});
    t->added_flags_[id] = token;
    t->added_ids_[token.content] = id;
    id_limit = std::max(id_limit, id + 1);
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(t->added_, AddedTokenSplitter::create(plain, spec.source));
  t->source_ = spec.source;
  t->model_ = std::move(model);
  t->legacy_ = spec.legacy;
  t->add_prefix_space_ = spec.add_prefix_space;
  t->clean_up_tokenization_spaces_ = spec.clean_up_tokenization_spaces;
  t->id_limit_ = id_limit;
  // The reference's convert_tokens_to_ids: added tokens, else the piece's id
  // (<unk>'s for a token that is no piece).
  const auto id_of = [&](const std::string& s) {
    const auto it = t->added_ids_.find(s);
    return it != t->added_ids_.end() ? it->second : static_cast<int32_t>(t->model_->piece_to_id(s));
  };
  for (const std::string& s : specials) {
    t->special_tokens_.insert(s);
    t->special_ids_.insert(id_of(s));
  }
  for (const auto& [id, token] : decoder) {
    if (!t->special_tokens_.contains(token.content)) t->standalone_tokens_.insert(token.content);
  }
  for (const std::string& s : additional) {
    if (id_of(s) >= pieces) t->standalone_tokens_.insert(s);
  }
  if (!spec.pad_token.empty()) t->pad_id_ = id_of(spec.pad_token);
  if (!spec.eos_token.empty()) t->eos_id_ = id_of(spec.eos_token);
  t->unk_token_ = spec.unk_token;
  if (!spec.legacy) {
    if (spec.unk_token.empty()) return bad_file(spec.source, "legacy=false needs an unk token (it prefixes each stretch)");
    std::vector<std::string> unk_pieces;
    if (!t->model_->encode(spec.unk_token, &unk_pieces, &error)) return bad_file(spec.source, error);
    t->unk_token_length_ = static_cast<int64_t>(unk_pieces.size());
  }
  return t;
}

absl::Status SentencePieceTokenizer::encode_stretch(const std::string& text, std::vector<std::string>* pieces) const {
  std::string error;
  std::vector<std::string> out;
  const bool prefixed = absl::StartsWith(text, kMetaSpace) || absl::StartsWith(text, " ");
  if (legacy_ || !prefixed) {
    if (!model_->encode(text, &out, &error)) return bad_file(source_, error);
  } else {
    // Without the dummy prefix the library drops a leading "▁"; encoding
    // behind the unk token keeps it, and the unk token's pieces go again.
    if (!model_->encode(unk_token_ + text, &out, &error)) return bad_file(source_, error);
    if (static_cast<int64_t>(out.size()) >= unk_token_length_) {
      out.erase(out.begin(), out.begin() + unk_token_length_);
    }
  }
  pieces->insert(pieces->end(), std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> SentencePieceTokenizer::tokenize(absl::string_view text) const {
  std::string s(text);
  const bool unprefixed = !legacy_ && !s.empty();
  if (unprefixed) {
    s = absl::StrReplaceAll(s, {{kMetaSpace, " "}});
    if (add_prefix_space_) s = absl::StrCat(kMetaSpace, s);
  }
  std::vector<Segment> segments;
  for (const TextSegment& segment : added_.split(s)) {
    segments.push_back({std::string(segment.text), segment.added_id});
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    if (segments[i].added_id < 0) continue;
    const SentencePieceAddedToken& flags = added_flags_.at(segments[i].added_id);
    if (flags.rstrip && i + 1 < segments.size() && segments[i + 1].added_id < 0) {
      segments[i + 1].text = python_strip(segments[i + 1].text, /*left=*/true, /*right=*/false);
    }
    if (flags.lstrip && i > 0 && segments[i - 1].added_id < 0) {
      segments[i - 1].text = python_strip(segments[i - 1].text, /*left=*/false, /*right=*/true);
    }
  }
  std::vector<std::string> tokens;
  for (const Segment& segment : segments) {
    if (segment.text.empty()) continue;
    if (segment.added_id >= 0) {
      tokens.push_back(segment.text);
    } else {
      DIFFUSIOND_RETURN_IF_ERROR(encode_stretch(segment.text, &tokens));
    }
  }
  if (unprefixed && tokens.size() > 1 && tokens[0] == kMetaSpace && is_special(tokens[1])) {
    tokens.erase(tokens.begin());
  }
  return tokens;
}

absl::StatusOr<std::vector<int32_t>> SentencePieceTokenizer::encode(absl::string_view text) const {
  DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(text, "text to tokenize"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<std::string> tokens, tokenize(text));
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) {
    const auto it = added_ids_.find(token);
    ids.push_back(it != added_ids_.end() ? it->second : static_cast<int32_t>(model_->piece_to_id(token)));
  }
  return ids;
}

std::vector<int32_t> SentencePieceTokenizer::with_special_tokens(std::vector<int32_t> ids) const {
  if (eos_id_ >= 0 && (ids.empty() || ids.back() != eos_id_)) ids.push_back(eos_id_);
  return ids;
}

int32_t SentencePieceTokenizer::token_to_id(absl::string_view token) const {
  const std::string key(token);
  if (const auto it = added_ids_.find(key); it != added_ids_.end()) return it->second;
  const int id = model_->piece_to_id(key);
  return model_->id_to_piece(id) == key ? id : -1;
}

const std::string* SentencePieceTokenizer::id_to_token(int32_t id) const {
  if (const auto it = added_flags_.find(id); it != added_flags_.end()) return &it->second.content;
  return id >= 0 && id < model_->size() ? &model_->id_to_piece(id) : nullptr;
}

std::string SentencePieceTokenizer::tokens_to_string(std::vector<std::string> tokens) const {
  // The prefix space T5 adds is taken off again.
  if (add_prefix_space_ && absl::StartsWith(tokens[0], kMetaSpace)) tokens[0].erase(0, kMetaSpace.size());
  std::vector<std::string> run;
  std::string out;
  bool previous_special = false;
  for (std::string& token : tokens) {
    // Special tokens are spelled out, never decoded by the model.
    if (is_special(token)) {
      if (!previous_special) out += " ";
      absl::StrAppend(&out, model_->decode(run), token);
      run.clear();
      previous_special = true;
    } else {
      run.push_back(std::move(token));
      previous_special = false;
    }
  }
  out += model_->decode(run);
  return python_strip(out, /*left=*/true, /*right=*/true);
}

absl::StatusOr<std::string> SentencePieceTokenizer::decode(absl::Span<const int32_t> ids,
                                                           const SentencePieceDecodeOptions& options) const {
  std::vector<std::string> parts;
  std::vector<std::string> run;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (options.skip_special_tokens && special_ids_.contains(ids[i])) continue;
    const std::string* token = id_to_token(ids[i]);
    if (token == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("decode: id ", ids[i], " at position ", i, " is not in the vocabulary of ", source_));
    }
    if (options.skip_special_tokens && is_special(*token)) continue;
    if (standalone_tokens_.contains(*token)) {
      if (!run.empty()) {
        std::string text = tokens_to_string(std::move(run));
        if (!text.empty()) parts.push_back(std::move(text));
        run.clear();
      }
      parts.push_back(*token);
    } else {
      run.push_back(*token);
    }
  }
  if (!run.empty()) parts.push_back(tokens_to_string(std::move(run)));
  std::string text = absl::StrJoin(parts, " ");
  return clean_up_tokenization_spaces_ ? clean_up_tokenization(std::move(text)) : text;
}

}  // namespace diffusiond
