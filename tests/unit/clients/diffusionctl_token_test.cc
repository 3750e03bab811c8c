#include <map>
#include <string>

#include "clients/diffusionctl/token.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_env.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond::ctl {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

// The token resolve_token returns; "<error>" when it fails.
std::string token_of(const GlobalOptions& g, const std::function<const char*(const char*)>& getenv) {
  absl::StatusOr<std::string> t = resolve_token(g, getenv);
  EXPECT_THAT(t, IsOk());
  return t.ok() ? *t : "<error>";
}

using Env = ::diffusiond::testing::FakeEnv;

TEST(ResolveToken, FlagThenFileThenVariables) {
  TempDir dir;
  const std::string flag_file = dir.write("flag", "from-flag-file\n");
  const std::string env_file = dir.write("env", "  from-env-file \n");
  Env env{{{"DIFFUSIOND_TOKEN", "from-env"}, {"DIFFUSIOND_TOKEN_FILE", env_file}}};
  GlobalOptions g;
  g.token = "from-flag";
  g.token_file = flag_file;
  EXPECT_EQ(token_of(g, env.getenv()), "from-flag");
  g.token.clear();
  EXPECT_EQ(token_of(g, env.getenv()), "from-flag-file");
  g.token_file.clear();
  EXPECT_EQ(token_of(g, env.getenv()), "from-env");
  env.vars.erase("DIFFUSIOND_TOKEN");
  EXPECT_EQ(token_of(g, env.getenv()), "from-env-file");
  env.vars.clear();
  EXPECT_EQ(token_of(g, env.getenv()), "");
}

TEST(ResolveToken, BadFilesAreNamedAndTheTokenIsNotQuoted) {
  TempDir dir;
  GlobalOptions g;
  g.token_file = dir.path("absent");
  EXPECT_THAT(resolve_token(g, Env{}.getenv()), StatusIs(absl::StatusCode::kNotFound, HasSubstr("--token_file")));
  g.token_file = dir.write("empty", "\n");
  EXPECT_THAT(resolve_token(g, Env{}.getenv()), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no token")));
  g.token_file = dir.write("two", "secret-one secret-two\n");
  absl::StatusOr<std::string> two = resolve_token(g, Env{}.getenv());
  EXPECT_THAT(two, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than one word")));
  EXPECT_THAT(std::string(two.status().message()), Not(HasSubstr("secret")));
  g.token_file.clear();
  EXPECT_THAT(resolve_token(g, Env{{{"DIFFUSIOND_TOKEN_FILE", dir.path("absent")}}}.getenv()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("DIFFUSIOND_TOKEN_FILE")));
}

}  // namespace
}  // namespace diffusiond::ctl
