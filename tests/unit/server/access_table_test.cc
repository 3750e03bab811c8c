#include "server/access_table.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

constexpr char kAdminToken[] = "admin-0123456789abcdef";
constexpr char kRunToken[] = "run-0123456789abcdef";

TEST(AccessTable, ParsesTokensAndCertificatesSkippingCommentsAndBlankLines) {
  absl::StatusOr<AccessTable> t = AccessTable::parse(
      "# who may call\n"
      "\n"
      "admin token admin-0123456789abcdef\n"
      "  run\ttoken   run-0123456789abcdef  \r\n"
      "read subject CN=ui,O=Example Org\n"
      "run cn backend\n");
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->token_count(), 2u);
  EXPECT_EQ(t->certificate_count(), 2u);
  EXPECT_THAT(t->role_of_token(kAdminToken), Optional(Role::kAdmin));
  EXPECT_THAT(t->role_of_token(kRunToken), Optional(Role::kRun));
  EXPECT_EQ(t->role_of_token("run-0123456789abcdeF"), std::nullopt);
  EXPECT_EQ(t->role_of_token("run-0123456789abcde"), std::nullopt);  // a prefix
  EXPECT_EQ(t->role_of_token(""), std::nullopt);
  // The subject is the rest of the line, spaces included.
  EXPECT_THAT(t->role_of_certificate("CN=ui,O=Example Org", "ui"), Optional(Role::kRead));
  EXPECT_THAT(t->role_of_certificate("CN=backend,O=Other", "backend"), Optional(Role::kRun));
  EXPECT_EQ(t->role_of_certificate("CN=stranger", "stranger"), std::nullopt);
  EXPECT_EQ(t->role_of_certificate("", ""), std::nullopt);
}

TEST(AccessTable, RefusesMalformedLinesNamingTheLine) {
  EXPECT_THAT(AccessTable::parse("# nothing\n\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no entries")));
  EXPECT_THAT(AccessTable::parse("read token 0123456789abcdef\nroot token 0123456789abcdeX\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2: the first field is not a role")));
  EXPECT_THAT(AccessTable::parse("read key 0123456789abcdef\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1: the second field is not a kind")));
  EXPECT_THAT(AccessTable::parse("read token\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1: expected ROLE KIND VALUE")));
  EXPECT_THAT(
      AccessTable::parse("read token short\n"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1: the token has 5 characters; at least 16")));
  EXPECT_THAT(AccessTable::parse("read token 0123456789abcdef extra\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one word")));
  EXPECT_THAT(AccessTable::parse("read token 0123456789abcdef\nadmin token 0123456789abcdef\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2: the token is listed before")));
  EXPECT_THAT(AccessTable::parse("read cn ui\nrun cn ui\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2: the cn 'ui' is listed before")));
}

// Errors end up in the daemon's log: a line written the wrong way round, or
// with a typo, must not put its token there.
TEST(AccessTable, ErrorsNeverQuoteAToken) {
  const std::string token = "secret-0123456789abcdef";
  for (const std::string& text :
       {token + " admin\n", "admin " + token + "\n", "admin tokn " + token + "\n",
        "admin token " + token + " " + token + "\n", "admin token " + token + "\nrun token " + token + "\n"}) {
    absl::StatusOr<AccessTable> t = AccessTable::parse(text);
    ASSERT_THAT(t, Not(IsOk())) << text;
    EXPECT_THAT(std::string(t.status().message()), Not(HasSubstr("secret"))) << t.status();
  }
}

TEST(Role, NamesRoundTripAndNest) {
  for (Role r : {Role::kRead, Role::kRun, Role::kAdmin}) EXPECT_THAT(parse_role(role_name(r)), Optional(r));
  EXPECT_EQ(parse_role("Admin"), std::nullopt);
  EXPECT_TRUE(role_covers(Role::kAdmin, Role::kRun));
  EXPECT_TRUE(role_covers(Role::kRun, Role::kRead));
  EXPECT_TRUE(role_covers(Role::kRead, Role::kRead));
  EXPECT_FALSE(role_covers(Role::kRun, Role::kAdmin));
  EXPECT_FALSE(role_covers(Role::kRead, Role::kRun));
}

}  // namespace
}  // namespace diffusiond
