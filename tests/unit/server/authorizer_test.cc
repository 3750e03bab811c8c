#include "server/authorizer.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kTable[] =
    "read token read-0123456789abcdef\n"
    "run token run-0123456789abcdef\n"
    "admin token admin-0123456789abcdef\n"
    "run cn backend\n";

constexpr char kList[] = "/diffusiond.v1.ModelService/ListModels";
constexpr char kStep[] = "/diffusiond.v1.DenoiseService/Step";
constexpr char kLoad[] = "/diffusiond.v1.ModelService/LoadModel";
constexpr char kHealth[] = "/grpc.health.v1.Health/Check";

CallerCredentials bearer(absl::string_view value) {
  CallerCredentials c;
  c.has_authorization = true;
  c.authorization = value;
  return c;
}

AccessTable table() {
  absl::StatusOr<AccessTable> t = AccessTable::parse(kTable);
  EXPECT_THAT(t, IsOk());
  return *t;
}

struct Case {
  const char* method;
  const char* authorization;  // null: none sent
  absl::StatusCode code;
  const char* reason;
};

TEST(Authorize, EachRoleAgainstEachKindOfMethod) {
  const AccessTable t = table();
  const Case cases[] = {
      {kHealth, nullptr, absl::StatusCode::kOk, ""},
      {kHealth, "Bearer wrong-0123456789abcdef", absl::StatusCode::kOk, ""},  // open: not looked at
      {kList, "Bearer read-0123456789abcdef", absl::StatusCode::kOk, ""},
      {kStep, "Bearer read-0123456789abcdef", absl::StatusCode::kPermissionDenied, "role"},
      {kLoad, "Bearer read-0123456789abcdef", absl::StatusCode::kPermissionDenied, "role"},
      {kList, "Bearer run-0123456789abcdef", absl::StatusCode::kOk, ""},
      {kStep, "bearer run-0123456789abcdef", absl::StatusCode::kOk, ""},  // the scheme ignores case
      {kLoad, "Bearer run-0123456789abcdef", absl::StatusCode::kPermissionDenied, "role"},
      {kList, "Bearer admin-0123456789abcdef", absl::StatusCode::kOk, ""},
      {kStep, "Bearer admin-0123456789abcdef", absl::StatusCode::kOk, ""},
      {kLoad, "Bearer  admin-0123456789abcdef ", absl::StatusCode::kOk, ""},
      {kList, nullptr, absl::StatusCode::kUnauthenticated, "missing_credentials"},
      {kList, "Bearer wrong-0123456789abcdef", absl::StatusCode::kUnauthenticated, "unknown_token"},
      {kList, "Basic cmVhZDp4", absl::StatusCode::kUnauthenticated, "malformed_header"},
      {kList, "Bearer ", absl::StatusCode::kUnauthenticated, "malformed_header"},
      {kList, "read-0123456789abcdef", absl::StatusCode::kUnauthenticated, "malformed_header"},
      {"/diffusiond.v1.ModelService/Unmapped", "Bearer admin-0123456789abcdef", absl::StatusCode::kPermissionDenied,
       "unmapped_method"},
      {"/diffusiond.v1.ModelService/Unmapped", nullptr, absl::StatusCode::kUnauthenticated, "missing_credentials"},
  };
  for (const Case& c : cases) {
    CallerCredentials caller = c.authorization != nullptr ? bearer(c.authorization) : CallerCredentials{};
    const AuthDecision d = authorize(t, c.method, caller);
    EXPECT_EQ(d.code, c.code) << c.method << " " << (c.authorization ? c.authorization : "(none)");
    EXPECT_EQ(d.reason, c.reason) << c.method << " " << (c.authorization ? c.authorization : "(none)");
    EXPECT_THAT(d.message, Not(HasSubstr("0123456789abcdef")));
  }
  EXPECT_THAT(authorize(t, kLoad, bearer("Bearer run-0123456789abcdef")).message,
              HasSubstr("needs role admin; this caller has role run"));
}

TEST(Authorize, CertificatesByCommonNameAndTokensFirst) {
  const AccessTable t = table();
  CallerCredentials cert;
  cert.subject = "CN=backend,O=example";
  cert.common_name = "backend";
  EXPECT_EQ(authorize(t, kStep, cert).code, absl::StatusCode::kOk);
  EXPECT_EQ(authorize(t, kLoad, cert).reason, "role");
  CallerCredentials stranger;
  stranger.subject = "CN=stranger";
  stranger.common_name = "stranger";
  EXPECT_EQ(authorize(t, kList, stranger).reason, "unknown_certificate");
  // A token decides alone: a bad one is refused whatever the certificate.
  CallerCredentials both = cert;
  both.has_authorization = true;
  both.authorization = "Bearer wrong-0123456789abcdef";
  EXPECT_EQ(authorize(t, kList, both).reason, "unknown_token");
  both.authorization = "Bearer admin-0123456789abcdef";
  EXPECT_EQ(authorize(t, kLoad, both).code, absl::StatusCode::kOk);
}

TEST(Authorizer, RefusesAMissingOrMalformedFileNamingIt) {
  TempDir dir;
  EXPECT_THAT(Authorizer::create(dir.path("absent")), StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent")));
  const std::string bad = dir.write("bad", "read token short\n");
  EXPECT_THAT(Authorizer::create(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(bad + ": line 1: the token has 5")));
}

TEST(Authorizer, ReloadsAnEditedFileAndKeepsTheTableOnABadOne) {
  TempDir dir;
  const std::string path = dir.write("tokens", kTable);
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::create(path);
  ASSERT_THAT(a, IsOk());
  Authorizer& auth = **a;
  EXPECT_EQ(auth.reload_if_changed().outcome, Authorizer::ReloadOutcome::kUnchanged);

  // Another size, so the change shows whatever the mtime's granularity.
  dir.write("tokens", "admin token newadmin-0123456789abcdef\n");
  EXPECT_EQ(auth.reload_if_changed().outcome, Authorizer::ReloadOutcome::kReloaded);
  EXPECT_EQ(auth.check(kLoad, bearer("Bearer newadmin-0123456789abcdef")).code, absl::StatusCode::kOk);
  EXPECT_EQ(auth.check(kLoad, bearer("Bearer admin-0123456789abcdef")).reason, "unknown_token");

  dir.write("tokens", "admin token short\n");
  const Authorizer::Reload failed = auth.reload_if_changed();
  EXPECT_EQ(failed.outcome, Authorizer::ReloadOutcome::kFailed);
  EXPECT_THAT(failed.error, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1")));
  // Reported once; the previous table stays in force.
  EXPECT_EQ(auth.reload_if_changed().outcome, Authorizer::ReloadOutcome::kUnchanged);
  EXPECT_EQ(auth.check(kLoad, bearer("Bearer newadmin-0123456789abcdef")).code, absl::StatusCode::kOk);

  std::filesystem::remove(path);
  EXPECT_EQ(auth.reload_if_changed().outcome, Authorizer::ReloadOutcome::kFailed);
  EXPECT_EQ(auth.check(kLoad, bearer("Bearer newadmin-0123456789abcdef")).code, absl::StatusCode::kOk);
  dir.write("tokens", kTable);
  EXPECT_EQ(auth.reload_if_changed().outcome, Authorizer::ReloadOutcome::kReloaded);
  EXPECT_EQ(auth.check(kLoad, bearer("Bearer admin-0123456789abcdef")).code, absl::StatusCode::kOk);
}

// A Kubernetes Secret volume: tokens -> ..data/tokens, ..data ->
// ..<timestamp>/; an update writes a new timestamped folder and renames a
// new ..data link over the old one.
TEST(Authorizer, FollowsASecretVolumeSymlinkSwap) {
  TempDir dir;
  dir.write("..v1/tokens", kTable);
  // Same size as kTable, so only the file's identity tells them apart.
  std::string second = kTable;
  second.replace(second.find("admin-"), 6, "ADMIN-");
  dir.write("..v2/tokens", second);
  std::filesystem::create_directory_symlink("..v1", dir.path("..data"));
  std::filesystem::create_symlink("..data/tokens", dir.path("tokens"));
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::create(dir.path("tokens"));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ((*a)->check(kLoad, bearer("Bearer admin-0123456789abcdef")).code, absl::StatusCode::kOk);

  std::filesystem::create_directory_symlink("..v2", dir.path("..data_tmp"));
  ASSERT_EQ(std::rename(dir.path("..data_tmp").c_str(), dir.path("..data").c_str()), 0);
  EXPECT_EQ((*a)->reload_if_changed().outcome, Authorizer::ReloadOutcome::kReloaded);
  EXPECT_EQ((*a)->check(kLoad, bearer("Bearer ADMIN-0123456789abcdef")).code, absl::StatusCode::kOk);
  EXPECT_EQ((*a)->check(kLoad, bearer("Bearer admin-0123456789abcdef")).reason, "unknown_token");
}

}  // namespace
}  // namespace diffusiond
