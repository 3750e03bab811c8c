#include "server/authorizer.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/util/file_text.h"
#include "server/method_roles.h"

namespace diffusiond {
namespace {

AuthDecision deny(absl::StatusCode code, absl::string_view reason, std::string message) {
  return AuthDecision{code, reason, std::move(message)};
}

// The token of "Bearer TOKEN" (the scheme is case-insensitive, RFC 7235);
// empty when the value has another form.
absl::string_view bearer_token(absl::string_view value) {
  value = absl::StripAsciiWhitespace(value);
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() || !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return {};
  }
  return absl::StripLeadingAsciiWhitespace(value.substr(kScheme.size()));
}

absl::StatusOr<std::shared_ptr<const AccessTable>> read_table(const std::string& path, std::string* text) {
  absl::StatusOr<std::string> read = read_text_file(path);
  if (!read.ok()) return absl::Status(read.status().code(), read.status().message());
  absl::StatusOr<AccessTable> table = AccessTable::parse(*read);
  if (!table.ok()) return bad_file(path, table.status().message());
  *text = *std::move(read);
  return std::make_shared<const AccessTable>(*std::move(table));
}

}  // namespace

AuthDecision authorize(const AccessTable& table, absl::string_view method_path, const CallerCredentials& caller) {
  const std::optional<MethodRule> rule = method_rule(method_path);
  if (rule.has_value() && rule->open) return {};
  std::optional<Role> role;
  if (caller.has_authorization) {
    const absl::string_view token = bearer_token(caller.authorization);
    if (token.empty()) {
      return deny(absl::StatusCode::kUnauthenticated, "malformed_header",
                  "the authorization metadata is not 'Bearer TOKEN'");
    }
    role = table.role_of_token(token);
    if (!role.has_value()) {
      return deny(absl::StatusCode::kUnauthenticated, "unknown_token",
                  "the bearer token is not one the daemon's --auth_token_file lists");
    }
  } else if (!caller.subject.empty() || !caller.common_name.empty()) {
    role = table.role_of_certificate(caller.subject, caller.common_name);
    if (!role.has_value()) {
      return deny(absl::StatusCode::kUnauthenticated, "unknown_certificate",
                  absl::StrCat("the client certificate '", caller.subject,
                               "' is not one the daemon's --auth_token_file lists (by subject or cn)"));
    }
  } else {
    return deny(absl::StatusCode::kUnauthenticated, "missing_credentials",
                "no credentials: send 'authorization: Bearer TOKEN' metadata or a client certificate");
  }
  if (!rule.has_value()) {
    return deny(absl::StatusCode::kPermissionDenied, "unmapped_method",
                absl::StrCat(method_path, " has no role in the daemon's method table; no caller may call it"));
  }
  if (!role_covers(*role, rule->role)) {
    return deny(
        absl::StatusCode::kPermissionDenied, "role",
        absl::StrCat(method_path, " needs role ", role_name(rule->role), "; this caller has role ", role_name(*role)));
  }
  return {};
}

absl::StatusOr<Authorizer::FileIdentity> Authorizer::identify(const std::string& path) {
  struct stat st;
  // stat follows symlinks: a Secret volume's file is a link through
  // ..data, which an update points at a new directory.
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    return absl::Status(e == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kUnavailable,
                        absl::StrCat(path, ": ", std::strerror(e)));
  }
  return FileIdentity{st.st_dev, st.st_ino, st.st_size,
                      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::create(std::string path) {
  std::unique_ptr<Authorizer> a(new Authorizer(std::move(path)));
  absl::StatusOr<FileIdentity> identity = identify(a->path_);
  if (!identity.ok()) return identity.status();
  absl::StatusOr<std::shared_ptr<const AccessTable>> table = read_table(a->path_, &a->text_);
  if (!table.ok()) return table.status();
  a->identity_ = *identity;
  {
    MutexLock lock(&a->mu_);
    a->table_ = *std::move(table);
  }
  return a;
}

AuthDecision Authorizer::check(absl::string_view method_path, const CallerCredentials& caller) const {
  return authorize(*table(), method_path, caller);
}

std::shared_ptr<const AccessTable> Authorizer::table() const {
  MutexLock lock(&mu_);
  return table_;
}

Authorizer::Reload Authorizer::reload_if_changed() {
  absl::StatusOr<FileIdentity> identity = identify(path_);
  absl::Status failure = identity.status();
  std::string text;
  absl::StatusOr<std::shared_ptr<const AccessTable>> table;
  if (failure.ok()) {
    if (*identity == identity_) return {};
    table = read_table(path_, &text);
    failure = table.status();
  }
  if (!failure.ok()) {
    // Reported once, not at every look: the file is looked at again until
    // it changes into one that parses.
    if (failure.ToString() == last_failure_) return {};
    last_failure_ = failure.ToString();
    return Reload{ReloadOutcome::kFailed, failure};
  }
  last_failure_.clear();
  identity_ = *identity;
  if (text == text_) return {};  // touched, not changed
  text_ = std::move(text);
  MutexLock lock(&mu_);
  table_ = *std::move(table);
  return Reload{ReloadOutcome::kReloaded, absl::OkStatus()};
}

}  // namespace diffusiond
