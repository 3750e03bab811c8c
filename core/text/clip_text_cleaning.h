// CLIP's text cleaning: what transformers' slow CLIPTokenizer does to text
// before its regex split, on the path it takes when the `ftfy` package is
// absent (the path the reference fixture records, and the only one
// implemented): BERT's BasicTokenizer(strip_accents=False,
// do_split_on_punc=False), whose words are then joined with one space.
//
//   1. drop U+0000, U+FFFD and every "C" category code point except \t \n
//      \r (so U+200B and the ZWJ inside emoji sequences vanish); map \t \n
//      \r, ' ' and the Zs separators to ' ';
//   2. put ' ' around each CJK Unified Ideograph (the blocks BERT lists:
//      kana and Hangul are not split);
//   3. NFC (not NFKC: full-width letters stay full-width);
//   4. split on white space as Python's str.split() does, lower-case each
//      word as str.lower() does (accents kept), join with ' '.
//
// With ftfy installed the reference instead runs whitespace_clean(
// ftfy.fix_text(text)).lower(), which repairs mojibake and HTML entities and
// neither splits CJK nor drops control characters; that path is not here.
//
// Not here: the regex split (core/text/pretokenizer.h) or BPE
// (core/text/clip_tokenizer.h).
#ifndef DIFFUSIOND_CORE_TEXT_CLIP_TEXT_CLEANING_H_
#define DIFFUSIOND_CORE_TEXT_CLIP_TEXT_CLEANING_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Returns `text` cleaned as above: words separated by single spaces, no
// leading or trailing space. INVALID_ARGUMENT naming the byte offset for
// text that is not valid UTF-8.
absl::StatusOr<std::string> clean_clip_text(absl::string_view text);

// Returns true for the code points BERT's _is_chinese_char treats as CJK
// ideographs (the CJK Unified Ideographs blocks, extensions A-E and the
// compatibility ideographs).
bool is_cjk_ideograph(char32_t c);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_CLIP_TEXT_CLEANING_H_
