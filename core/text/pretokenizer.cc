#include "core/text/pretokenizer.h"

#include <cstddef>

#include "core/text/unicode.h"
#include "core/util/utf8.h"

namespace diffusiond {
namespace {

// Case-insensitive as Python's `regex` module is with IGNORECASE (simple case
// folding): besides ASCII case, 's' also matches U+017F (long s) and 'k'
// U+212A (Kelvin sign); the letters the patterns spell have no other
// variants.
char32_t fold_case(char32_t c) {
  if (c == 0x17F) return 's';
  if (c == 0x212A) return 'k';
  return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

// 's|'t|'re|'ve|'m|'ll|'d case-insensitively at points[i]: the end of the
// match, or i if none. Both regexes start with these alternatives.
size_t contraction_end(const std::vector<CodePoint>& points, size_t i) {
  const auto at = [&](size_t k) -> char32_t { return k < points.size() ? fold_case(points[k].value) : 0; };
  if (at(i) != '\'') return i;
  const char32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  const char32_t b = at(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

// The text as code points, matched at code point indices. at(i) past the
// end is 0 (a control character); the class tests check bounds themselves.
class Scanner {
 public:
  explicit Scanner(absl::string_view text) : points_(decode_utf8(text)), text_bytes_(text.size()) {}

  size_t size() const { return points_.size(); }
  size_t byte_offset(size_t i) const { return i < points_.size() ? points_[i].offset : text_bytes_; }

  // Returns the end (exclusive) of the match at i: the first alternative of
  // the pattern that matches there. Always > i for i < size().
  size_t match(size_t i) const {
    if (size_t end = contraction(i); end > i) return end;
    if (size_t end = letters(i); end > i) return end;
    if (is_number(at(i))) return i + 1;
    if (size_t end = symbols(i); end > i) return end;
    if (size_t end = space_then_newlines(i); end > i) return end;
    const size_t run_end = white_space_run_end(i);
    // \s+(?!\S): the whole run if the text ends there, else all of the run
    // but its last code point (which then stays for the next piece), as long
    // as that leaves at least one.
    if (run_end == size()) return run_end;
    if (run_end - i >= 2) return run_end - 1;
    return run_end;  // \s+ (a single white space before a non-space)
  }

 private:
  char32_t at(size_t i) const { return i < points_.size() ? points_[i].value : 0; }
  bool is_line_break(size_t i) const { return i < size() && (at(i) == '\r' || at(i) == '\n'); }
  bool is_space(size_t i) const { return i < size() && is_white_space(at(i)); }
  bool is_letter_at(size_t i) const { return i < size() && is_letter(at(i)); }
  // [^\s\p{L}\p{N}]
  bool is_symbol(size_t i) const {
    return i < size() && !is_white_space(at(i)) && !is_letter(at(i)) && !is_number(at(i));
  }

  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  size_t contraction(size_t i) const { return contraction_end(points_, i); }

  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t letters(size_t i) const {
    size_t k = i;
    if (!is_letter_at(k)) {
      if (k >= size() || is_line_break(k) || is_number(at(k)) || !is_letter_at(k + 1)) return i;
      ++k;
    }
    while (is_letter_at(k)) ++k;
    return k;
  }

  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  size_t symbols(size_t i) const {
    size_t k = i;
    if (at(k) == ' ' && is_symbol(k + 1)) ++k;
    if (!is_symbol(k)) return i;
    while (is_symbol(k)) ++k;
    while (is_line_break(k)) ++k;
    return k;
  }

  // \s*[\r\n]+ : greedy \s* gives back code points until a line break
  // follows, so the match ends after the last line break of the run.
  size_t space_then_newlines(size_t i) const {
    const size_t run_end = white_space_run_end(i);
    for (size_t k = run_end; k > i; --k) {
      if (is_line_break(k - 1)) return k;
    }
    return i;
  }

  size_t white_space_run_end(size_t i) const {
    size_t k = i;
    while (is_space(k)) ++k;
    return k;
  }

  std::vector<CodePoint> points_;
  size_t text_bytes_;
};

// The end of the match of CLIP's regex at points[i] (i < size, not white
// space): the first alternative that matches there.
size_t clip_match_end(const std::vector<CodePoint>& points, size_t i) {
  const size_t n = points.size();
  for (const absl::string_view special : {"<|startoftext|>", "<|endoftext|>"}) {
    size_t k = 0;
    while (k < special.size() && i + k < n && fold_case(points[i + k].value) == static_cast<char32_t>(special[k])) ++k;
    if (k == special.size()) return i + k;
  }
  if (const size_t end = contraction_end(points, i); end > i) return end;
  const auto letter = [&](size_t k) { return k < n && is_letter(points[k].value); };
  if (letter(i)) {
    size_t k = i;
    while (letter(k)) ++k;
    return k;
  }
  if (is_number(points[i].value)) return i + 1;
  // [^\s\p{L}\p{N}]+: points[i] is one (it is none of the three).
  size_t k = i + 1;
  while (k < n && !is_white_space(points[k].value) && !is_letter(points[k].value) && !is_number(points[k].value)) ++k;
  return k;
}

}  // namespace

std::vector<std::string> split_clip_pieces(absl::string_view text) {
  const std::vector<CodePoint> points = decode_utf8(text);
  const auto offset = [&](size_t i) { return i < points.size() ? points[i].offset : text.size(); };
  std::vector<std::string> pieces;
  for (size_t i = 0; i < points.size();) {
    if (is_white_space(points[i].value)) {
      ++i;
      continue;
    }
    const size_t end = clip_match_end(points, i);
    pieces.emplace_back(text.substr(offset(i), offset(end) - offset(i)));
    i = end;
  }
  return pieces;
}

std::vector<std::string> split_qwen2_pieces(absl::string_view text) {
  const Scanner scanner(text);
  std::vector<std::string> pieces;
  for (size_t i = 0; i < scanner.size();) {
    const size_t end = scanner.match(i);
    const size_t from = scanner.byte_offset(i);
    pieces.emplace_back(text.substr(from, scanner.byte_offset(end) - from));
    i = end;
  }
  return pieces;
}

}  // namespace diffusiond
