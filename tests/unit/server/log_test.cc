// Log: level names, filtering, logfmt quoting and the line format.
#include "server/log.h"

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::SizeIs;

// A Log whose lines land in `lines`.
Log capturing(LogLevel min_level, std::vector<std::string>* lines) {
  return Log(min_level, [lines](absl::string_view line) { lines->emplace_back(line); });
}

// The line without its "ts=... " prefix.
std::string after_ts(const std::string& line) {
  const size_t space = line.find(' ');
  return space == std::string::npos ? line : line.substr(space + 1);
}

TEST(LogLevel, ParsesTheFourNames) {
  EXPECT_EQ(*parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_EQ(*parse_log_level("info"), LogLevel::kInfo);
  EXPECT_EQ(*parse_log_level("warning"), LogLevel::kWarning);
  EXPECT_EQ(*parse_log_level("error"), LogLevel::kError);
  EXPECT_THAT(parse_log_level("verbose"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'verbose'")));
  EXPECT_THAT(parse_log_level("INFO"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'INFO'")));
  EXPECT_THAT(parse_log_level(""), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("log level")));
}

TEST(LogfmtValue, PlainValuesStayBare) {
  EXPECT_EQ(logfmt_value("ready"), "ready");
  EXPECT_EQ(logfmt_value("127.0.0.1:50051"), "127.0.0.1:50051");
  EXPECT_EQ(logfmt_value("/models/z-image_turbo"), "/models/z-image_turbo");
}

TEST(LogfmtValue, QuotesWhatWouldBreakTheLine) {
  EXPECT_EQ(logfmt_value(""), "\"\"");
  EXPECT_EQ(logfmt_value("model loaded"), "\"model loaded\"");
  EXPECT_EQ(logfmt_value("a=b"), "\"a=b\"");
  EXPECT_EQ(logfmt_value("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(logfmt_value("C:\\models"), "\"C:\\\\models\"");
  EXPECT_EQ(logfmt_value("two\nlines"), "\"two\\nlines\"");
  EXPECT_EQ(logfmt_value("tab\there"), "\"tab\\there\"");
  EXPECT_EQ(logfmt_value("back\rwards"), "\"back\\rwards\"");
  EXPECT_EQ(logfmt_value(absl::string_view("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(logfmt_value("bell\x07"), "\"bell\\u0007\"");
}

TEST(Log, LineFormat) {
  std::vector<std::string> lines;
  Log log = capturing(LogLevel::kInfo, &lines);
  log.info("ready", "listen=127.0.0.1:50051");
  ASSERT_THAT(lines, SizeIs(1));
  EXPECT_THAT(lines[0], MatchesRegex("ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
                                     "level=info msg=ready listen=127\\.0\\.0\\.1:50051"));
  EXPECT_EQ(lines[0].find('\n'), std::string::npos);
}

TEST(Log, TimestampIsNowInUtc) {
  std::vector<std::string> lines;
  Log log = capturing(LogLevel::kInfo, &lines);
  const absl::Time before = absl::Now();
  log.info("tick");
  const absl::Time after = absl::Now();
  ASSERT_THAT(lines, SizeIs(1));
  const std::string ts = lines[0].substr(3, lines[0].find(' ') - 3);
  absl::Time when;
  std::string error;
  ASSERT_TRUE(absl::ParseTime("%Y-%m-%dT%H:%M:%E3SZ", ts, absl::UTCTimeZone(), &when, &error)) << error;
  EXPECT_GE(when, absl::FromUnixMillis(absl::ToUnixMillis(before)));  // the stamp truncates to ms
  EXPECT_LE(when, after);
}

TEST(Log, MessagesAreQuotedAndFieldsAppendedAsGiven) {
  std::vector<std::string> lines;
  Log log = capturing(LogLevel::kDebug, &lines);
  log.warning("model evicted", "model=\"a b\" bytes=3");
  log.error("bad\nthing");
  log.write(LogLevel::kDebug, "d");
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_EQ(after_ts(lines[0]), "level=warning msg=\"model evicted\" model=\"a b\" bytes=3");
  EXPECT_EQ(after_ts(lines[1]), "level=error msg=\"bad\\nthing\"");  // no trailing space
  EXPECT_EQ(after_ts(lines[2]), "level=debug msg=d");
}

TEST(Log, DropsLinesBelowTheMinimumLevel) {
  std::vector<std::string> lines;
  Log log = capturing(LogLevel::kWarning, &lines);
  EXPECT_FALSE(log.enabled(LogLevel::kDebug));
  EXPECT_FALSE(log.enabled(LogLevel::kInfo));
  EXPECT_TRUE(log.enabled(LogLevel::kWarning));
  EXPECT_TRUE(log.enabled(LogLevel::kError));
  log.write(LogLevel::kDebug, "one");
  log.info("two");
  log.warning("three");
  log.error("four");
  std::vector<std::string> bodies;
  for (const std::string& l : lines) bodies.push_back(after_ts(l));
  EXPECT_THAT(bodies, ElementsAre("level=warning msg=three", "level=error msg=four"));
}

TEST(Log, DebugLevelKeepsEverything) {
  std::vector<std::string> lines;
  Log log = capturing(LogLevel::kDebug, &lines);
  log.write(LogLevel::kDebug, "one");
  log.info("two");
  log.warning("three");
  log.error("four");
  EXPECT_THAT(lines, SizeIs(4));
}

}  // namespace
}  // namespace diffusiond
