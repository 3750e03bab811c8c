#include "core/text/unicode.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/util/utf8.h"
#include "core/util/status_macros.h"

namespace diffusiond {

bool is_letter(char32_t c) {
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_L_MASK) != 0;
}

bool is_number(char32_t c) {
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0;
}

bool is_white_space(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)) != 0; }

bool is_other(char32_t c) {
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_C_MASK) != 0;
}

bool is_space_separator(char32_t c) {
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_ZS_MASK) != 0;
}

absl::StatusOr<std::string> to_lower(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(text, what));
  if (text.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": text of ", text.size(), " bytes is too long"));
  }
  icu::UnicodeString s =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  // The root locale: no Turkish or Lithuanian rules, as Python's lower().
  s.toLower(icu::Locale::getRoot());
  std::string out;
  s.toUTF8String(out);
  return out;
}

absl::StatusOr<std::string> nfc_normalize(absl::string_view text, absl::string_view what) {
  // ICU would replace bad bytes with U+FFFD; refuse them first instead.
  DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(text, what));
  if (text.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": text of ", text.size(), " bytes is too long"));
  }
  UErrorCode error = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(error);
  if (U_FAILURE(error)) {
    return absl::InternalError(absl::StrCat("ICU NFC normaliser unavailable: ", u_errorName(error)));
  }
  const icu::UnicodeString source =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  // Most prompts are already NFC; skip the copy then.
  if (nfc->isNormalized(source, error) && U_SUCCESS(error)) return std::string(text);
  error = U_ZERO_ERROR;
  const icu::UnicodeString normalized = nfc->normalize(source, error);
  if (U_FAILURE(error)) {
    return absl::InternalError(absl::StrCat(what, ": NFC normalisation failed: ", u_errorName(error)));
  }
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

}  // namespace diffusiond
