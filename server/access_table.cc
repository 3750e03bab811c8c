#include "server/access_table.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace diffusiond {
namespace {

absl::Status bad_line(size_t line, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", problem));
}

// Equal without an early exit: every byte of `expected` is looked at
// whatever `given` holds. Only the length can differ in time, and a token's
// length is no secret worth a timing channel (its minimum is documented).
bool equal_in_constant_time(absl::string_view given, absl::string_view expected) {
  if (given.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

// Splits off the first whitespace-separated word of `rest`.
absl::string_view next_word(absl::string_view* rest) {
  *rest = absl::StripLeadingAsciiWhitespace(*rest);
  size_t end = 0;
  while (end < rest->size() && !absl::ascii_isspace(static_cast<unsigned char>((*rest)[end]))) ++end;
  absl::string_view word = rest->substr(0, end);
  *rest = absl::StripAsciiWhitespace(rest->substr(end));
  return word;
}

}  // namespace

absl::string_view role_name(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kRun:
      return "run";
    case Role::kAdmin:
      return "admin";
  }
  return "read";
}

std::optional<Role> parse_role(absl::string_view name) {
  for (Role r : {Role::kRead, Role::kRun, Role::kAdmin}) {
    if (name == role_name(r)) return r;
  }
  return std::nullopt;
}

absl::StatusOr<AccessTable> AccessTable::parse(absl::string_view text) {
  AccessTable table;
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    absl::string_view rest = absl::StripAsciiWhitespace(line);
    if (rest.empty() || rest.front() == '#') continue;
    // The first field is quoted in no message: a line written "TOKEN ROLE"
    // would put the token there.
    const std::optional<Role> role = parse_role(next_word(&rest));
    if (!role.has_value()) return bad_line(line_number, "the first field is not a role (read, run or admin)");
    const absl::string_view kind = next_word(&rest);
    if (rest.empty()) return bad_line(line_number, "expected ROLE KIND VALUE; the value is missing");
    if (kind == "token") {
      const absl::string_view token = next_word(&rest);
      if (!rest.empty()) return bad_line(line_number, "a token is one word (no spaces)");
      if (token.size() < kMinTokenChars) {
        return bad_line(line_number, absl::StrCat("the token has ", token.size(), " characters; at least ",
                                                  kMinTokenChars, " are needed"));
      }
      for (const TokenEntry& e : table.tokens_) {
        if (e.token == token) return bad_line(line_number, "the token is listed before");
      }
      table.tokens_.push_back(TokenEntry{std::string(token), *role});
    } else if (kind == "subject" || kind == "cn") {
      std::map<std::string, Role>& names = kind == "subject" ? table.subjects_ : table.common_names_;
      if (!names.emplace(std::string(rest), *role).second) {
        return bad_line(line_number, absl::StrCat("the ", kind, " '", rest, "' is listed before"));
      }
    } else {
      return bad_line(line_number, "the second field is not a kind (token, subject or cn)");
    }
  }
  if (table.tokens_.empty() && table.subjects_.empty() && table.common_names_.empty()) {
    return absl::InvalidArgumentError("no entries (expected lines of ROLE KIND VALUE)");
  }
  return table;
}

std::optional<Role> AccessTable::role_of_token(absl::string_view token) const {
  std::optional<Role> found;
  // No early exit: the time does not depend on which entry matched.
  for (const TokenEntry& e : tokens_) {
    if (equal_in_constant_time(token, e.token)) found = e.role;
  }
  return found;
}

std::optional<Role> AccessTable::role_of_certificate(absl::string_view subject, absl::string_view common_name) const {
  if (!subject.empty()) {
    if (auto it = subjects_.find(std::string(subject)); it != subjects_.end()) return it->second;
  }
  if (!common_name.empty()) {
    if (auto it = common_names_.find(std::string(common_name)); it != common_names_.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace diffusiond
