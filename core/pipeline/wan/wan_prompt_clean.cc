#include "core/pipeline/wan/wan_prompt_clean.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/util/utf8.h"

namespace diffusiond {
namespace {

// The named references decoded: HTML5's for the characters a prompt is
// likely to carry escaped. A name without ';' is one of HTML's legacy
// references, which are recognised without it (and as a prefix: "&ampx" is
// "&x").
struct NamedReference {
  absl::string_view name;
  char32_t value;
};
constexpr NamedReference kNamedReferences[] = {
    {"amp;", U'&'}, {"amp", U'&'},    {"AMP;", U'&'},       {"AMP", U'&'},       {"lt;", U'<'},
    {"lt", U'<'},   {"LT;", U'<'},    {"LT", U'<'},         {"gt;", U'>'},       {"gt", U'>'},
    {"GT;", U'>'},  {"GT", U'>'},     {"quot;", U'"'},      {"quot", U'"'},      {"QUOT;", U'"'},
    {"QUOT", U'"'}, {"apos;", U'\''}, {"nbsp;", U'\u00a0'}, {"nbsp", U'\u00a0'},
};
// The longest legacy name (without ';').
constexpr size_t kLongestLegacyName = 4;
// How many characters a name may have (Python's pattern: {1,32}).
constexpr size_t kMaxNameChars = 32;

// HTML5's reading of the C1 range 0x80-0x9F in a numeric reference: as
// Windows-1252 (the five bytes it leaves undefined stay themselves).
constexpr char32_t kWindows1252C1[] = {0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
                                       0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
                                       0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
                                       0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};
static_assert(sizeof(kWindows1252C1) / sizeof(kWindows1252C1[0]) == 0xA0 - 0x80, "one per C1 code");

std::optional<char32_t> named_reference(absl::string_view name) {
  for (const NamedReference& r : kNamedReferences) {
    if (r.name == name) return r.value;
  }
  return std::nullopt;
}

// Appends what numeric reference `n` (saturated above U+10FFFF) stands for.
void append_numeric_reference(uint32_t n, std::string* out) {
  if (n == 0) return append_utf8(U'\ufffd', out);
  if (n == 0x0D) return out->push_back('\r');
  if (n >= 0x80 && n < 0xA0) return append_utf8(kWindows1252C1[n - 0x80], out);
  if ((n >= 0xD800 && n <= 0xDFFF) || n > 0x10FFFF) return append_utf8(U'\ufffd', out);
  const bool control = (n >= 0x01 && n <= 0x08) || n == 0x0B || (n >= 0x0E && n <= 0x1F) || n == 0x7F;
  const bool noncharacter = (n >= 0xFDD0 && n <= 0xFDEF) || (n & 0xFFFE) == 0xFFFE;
  if (control || noncharacter) return;  // dropped
  append_utf8(static_cast<char32_t>(n), out);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads the numeric reference after "&#" at text[i...]: decimal digits, or
// 'x' and hex digits, then an optional ';'. Returns the bytes it took, 0
// when there is none.
size_t read_numeric_reference(absl::string_view text, size_t i, std::string* out) {
  const bool hex = i < text.size() && (text[i] == 'x' || text[i] == 'X');
  const int base = hex ? 16 : 10;
  size_t j = hex ? i + 1 : i;
  const size_t digits = j;
  uint32_t n = 0;
  for (; j < text.size(); ++j) {
    const int d = hex_value(text[j]);
    if (d < 0 || d >= base) break;
    n = n > 0x10FFFF ? n : n * base + d;  // saturates past the last code point
  }
  if (j == digits) return 0;
  if (j < text.size() && text[j] == ';') ++j;
  append_numeric_reference(n, out);
  return j - i;
}

bool ends_name(char c) {
  return c == '\t' || c == '\n' || c == '\f' || c == ' ' || c == '<' || c == '&' || c == '#' || c == ';';
}

// Reads the named reference after '&' at text[i...] (Python's: up to 32
// characters that do not end a name, then an optional ';'), appending its
// value, or itself when it names nothing. Returns the bytes it took, 0 when
// there is no name.
size_t read_named_reference(absl::string_view text, size_t i, std::string* out) {
  size_t j = i, chars = 0;
  while (j < text.size() && !ends_name(text[j])) {
    if ((static_cast<unsigned char>(text[j]) & 0xC0) != 0x80 && ++chars > kMaxNameChars) break;  // a lead byte
    ++j;
  }
  if (j == i) return 0;
  size_t name_chars = std::min(chars, kMaxNameChars);
  if (j < text.size() && text[j] == ';') {
    ++j;
    ++name_chars;
  }
  const absl::string_view name = text.substr(i, j - i);
  if (std::optional<char32_t> value = named_reference(name)) {
    append_utf8(*value, out);
    return name.size();
  }
  // The longest legacy name of at least two characters that the reference
  // starts with, shorter than it. (Names are ASCII, so k characters are k
  // bytes wherever one can match.)
  for (size_t k = std::min(kLongestLegacyName, name_chars - 1); k >= 2; --k) {
    if (std::optional<char32_t> value = named_reference(name.substr(0, k))) {
      append_utf8(*value, out);
      out->append(name.substr(k).data(), name.size() - k);
      return name.size();
    }
  }
  out->push_back('&');
  out->append(name.data(), name.size());
  return name.size();
}

// One pass of html.unescape.
std::string unescape_html(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '&') {
      out.push_back(text[i++]);
      continue;
    }
    const bool numeric = i + 1 < text.size() && text[i + 1] == '#';
    const size_t start = i + (numeric ? 2 : 1);
    const size_t taken = numeric ? read_numeric_reference(text, start, &out) : read_named_reference(text, start, &out);
    if (taken == 0) {
      out.push_back('&');  // not a reference: the '&' is text
      ++i;
    } else {
      i = start + taken;
    }
  }
  return out;
}

// Unicode's White_Space, which the `regex` module's \s matches.
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// What Python's str.strip() trims: White_Space and the separators U+001C
// to U+001F.
bool is_stripped(char32_t c) { return is_white_space(c) || (c >= 0x1C && c <= 0x1F); }

// text.strip(), over code points.
absl::string_view strip(absl::string_view text) {
  const std::vector<CodePoint> cps = decode_utf8(text);
  size_t first = 0, last = cps.size();
  while (first < last && is_stripped(cps[first].value)) ++first;
  while (last > first && is_stripped(cps[last - 1].value)) --last;
  if (first == last) return {};
  const size_t end = last < cps.size() ? cps[last].offset : text.size();
  return text.substr(cps[first].offset, end - cps[first].offset);
}

}  // namespace

std::string clean_wan_prompt(absl::string_view prompt) {
  if (!validate_utf8(prompt, "prompt").ok()) return std::string(prompt);
  // Decoding never makes invalid UTF-8: every value it appends is a scalar.
  const std::string unescaped = unescape_html(unescape_html(prompt));
  std::string collapsed;
  bool in_space = false;
  for (const CodePoint& cp : decode_utf8(strip(unescaped))) {
    if (is_white_space(cp.value)) {
      if (!in_space) collapsed.push_back(' ');
      in_space = true;
      continue;
    }
    in_space = false;
    append_utf8(cp.value, &collapsed);
  }
  return std::string(strip(collapsed));
}

}  // namespace diffusiond
