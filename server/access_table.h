// AccessTable: who may call the daemon — the parsed --auth_token_file. Each
// entry gives a role to a bearer token or to a client certificate (its
// subject or common name, for mutual TLS). Roles nest: admin ⊇ run ⊇ read.
//
// The file, one entry a line; blank lines and lines starting with # are
// skipped:
//
//   # ROLE  KIND     VALUE
//   admin   token    7f3c...          (a bearer token: one word, 16+ characters)
//   run     cn       backend          (a client certificate's common name)
//   read    subject  CN=ui,O=example  (its whole subject, RFC 2253, the rest of the line)
//
// Not here: which role each method needs (method_roles.h), reading and
// reloading the file (authorizer.h), gRPC.
#ifndef DIFFUSIOND_SERVER_ACCESS_TABLE_H_
#define DIFFUSIOND_SERVER_ACCESS_TABLE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// What a caller may do. Each role includes those before it.
enum class Role { kRead = 0, kRun = 1, kAdmin = 2 };

// "read", "run", "admin".
absl::string_view role_name(Role role);
// The role called `name`; empty for any other text.
std::optional<Role> parse_role(absl::string_view name);
// Whether a caller holding `held` may do what `needed` allows.
inline bool role_covers(Role held, Role needed) { return static_cast<int>(held) >= static_cast<int>(needed); }

// Tokens shorter than this are refused: a guessable token is no lock.
inline constexpr size_t kMinTokenChars = 16;

// Immutable once parsed; thread-compatible (const methods may be called
// from any thread).
class AccessTable {
 public:
  // Parses the file's text. INVALID_ARGUMENT "line N: ..." for an unknown
  // role or kind, a missing value, a short token or one with spaces, a
  // credential listed twice, or a file with no entries. A message never
  // quotes a token, nor a field that could be one.
  static absl::StatusOr<AccessTable> parse(absl::string_view text);

  // The role of bearer token `token`, or empty. Compares against every
  // token in constant time per token, so the time taken does not tell how
  // much of a token matched.
  std::optional<Role> role_of_token(absl::string_view token) const;
  // The role of a verified client certificate: its subject's entry, else
  // its common name's; empty when neither is listed.
  std::optional<Role> role_of_certificate(absl::string_view subject, absl::string_view common_name) const;

  size_t token_count() const { return tokens_.size(); }
  size_t certificate_count() const { return subjects_.size() + common_names_.size(); }

 private:
  struct TokenEntry {
    std::string token;
    Role role;
  };
  std::vector<TokenEntry> tokens_;
  std::map<std::string, Role> subjects_;
  std::map<std::string, Role> common_names_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_ACCESS_TABLE_H_
