#include "core/util/utf8.h"

#include <cassert>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace diffusiond {
namespace {

// Decodes the sequence starting at text[i]. Returns its length (1..4) and
// sets *value, or returns the length of the maximal ill-formed subpart
// (at least 1) negated, as Unicode's "best practice for U+FFFD" counts it.
int decode_one(absl::string_view text, size_t i, char32_t* value) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    *value = b0;
    return 1;
  }
  int length;
  char32_t c;
  // The allowed range of the second byte narrows for E0, ED, F0 and F4, which
  // is what rules out overlongs, surrogates and values past U+10FFFF.
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    c = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    c = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    c = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k < length; ++k) {
    if (i + k >= text.size()) return -k;
    const uint8_t b = byte(i + k);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return -k;
    c = (c << 6) | (b & 0x3F);
  }
  *value = c;
  return length;
}

}  // namespace

absl::Status validate_utf8(absl::string_view text, absl::string_view what) {
  for (size_t i = 0; i < text.size();) {
    char32_t c;
    const int n = decode_one(text, i, &c);
    if (n < 0) {
      // The offset is where the ill-formed sequence starts; -n bytes of it
      // were acceptable before the one that was not (or the text ended).
      const uint8_t lead = static_cast<uint8_t>(text[i]);
      const bool cut_off = i + static_cast<size_t>(-n) >= text.size() && lead >= 0xC2 && lead <= 0xF4;
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: invalid UTF-8 at byte offset %d (byte 0x%02X%s)", what, i, lead,
          cut_off ? ": sequence cut off by the end of the text" : ""));
    }
    i += n;
  }
  return absl::OkStatus();
}

std::vector<CodePoint> decode_utf8(absl::string_view text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char32_t c;
    const int n = decode_one(text, i, &c);
    assert(n > 0);
    out.push_back({c, i});
    i += n;
  }
  return out;
}

void append_utf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string decode_utf8_lossy(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    char32_t c;
    const int n = decode_one(bytes, i, &c);
    if (n > 0) {
      out.append(bytes.data() + i, n);
      i += n;
    } else {
      append_utf8(0xFFFD, &out);
      i += -n;
    }
  }
  return out;
}

}  // namespace diffusiond
