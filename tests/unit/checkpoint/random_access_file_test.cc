// The read loop every RandomAccessFile runs (read_fully) over scripted preads
// — short reads, EINTR, an early end, errno — and the real file when it is
// truncated or replaced after it was opened. The checkpoint reader uses
// pread, never a file mapping, so a file shrinking under it is an error to
// report, not a SIGBUS.
#include "core/checkpoint/random_access_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
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
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::string_view kBytes = "0123456789abcdef";

// A pread over kBytes that answers each call with the next scripted step: a
// byte count to deliver at most (0 = end of file) or a negative errno.
class ScriptedPread {
 public:
  explicit ScriptedPread(std::deque<int64_t> steps) : steps_(std::move(steps)) {}

  int64_t operator()(char* dst, int64_t n, int64_t offset) {
    ++calls_;
    const int64_t step = steps_.empty() ? n : steps_.front();
    if (!steps_.empty()) steps_.pop_front();
    if (step < 0) {
      errno = static_cast<int>(-step);
      return -1;
    }
    const int64_t got = std::min({step, n, static_cast<int64_t>(kBytes.size()) - offset});
    std::memcpy(dst, kBytes.data() + offset, static_cast<size_t>(got));
    return got;
  }
  int calls() const { return calls_; }

 private:
  std::deque<int64_t> steps_;
  int calls_ = 0;
};

TEST(ReadFully, ShortReadsAndInterruptionsAreRetriedUntilEveryByteArrives) {
  ScriptedPread pread({1, -EINTR, 2, 1, -EINTR, 3});
  std::string out(10, '\0');
  EXPECT_THAT(read_fully("f", 16, 2, 10, out.data(), std::ref(pread)), IsOk());
  EXPECT_EQ(out, kBytes.substr(2, 10));
  EXPECT_EQ(pread.calls(), 7);  // 1 + 2 + 1 + 3 bytes, two EINTRs, then the 3 left
}

TEST(ReadFully, AnEndBeforeTheLastByteIsDataLossNamingTheShortfall) {
  ScriptedPread pread({3, 0});
  std::string out(8, '\0');
  EXPECT_THAT(read_fully("f", 16, 4, 8, out.data(), std::ref(pread)),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("f: file ends at offset 7, 5 bytes short"),
                             HasSubstr("it held 16 bytes when opened, so it was truncated"))));
  // Past the size it had when opened, the file did not shrink: the caller
  // asked for too much, and the message does not blame a truncation.
  ScriptedPread past({0});
  EXPECT_THAT(read_fully("f", 16, 16, 2, out.data(), std::ref(past)),
              StatusIs(absl::StatusCode::kDataLoss, Not(HasSubstr("truncated"))));
}

TEST(ReadFully, AnIoErrorIsUnavailableNamingErrno) {
  std::string out(8, '\0');
  ScriptedPread eio({4, -EIO});
  EXPECT_THAT(read_fully("f", 16, 0, 8, out.data(), std::ref(eio)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("f: read at offset 4: Input/output error")));
  ScriptedPread enospc({-ENOSPC});
  EXPECT_THAT(read_fully("f", 16, 0, 8, out.data(), std::ref(enospc)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("No space left on device")));
}

TEST(PosixRandomAccessFile, AFileTruncatedAfterOpeningIsDataLoss) {
  TempDir dir;
  const std::string path = dir.write("w", std::string(kBytes));
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = open_random_access_file(path);
  ASSERT_THAT(file, IsOk());
  ASSERT_EQ(::truncate(path.c_str(), 10), 0);
  std::string out(16, '\0');
  EXPECT_THAT((*file)->read_at(0, 10, out.data()), IsOk());  // what is left reads
  EXPECT_THAT((*file)->read_at(4, 12, out.data()),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path + ": file ends at offset 10, 6 bytes short"),
                             HasSubstr("it held 16 bytes when opened"))));
}

TEST(PosixRandomAccessFile, AFileReplacedAfterOpeningStillReadsTheOpenedOne) {
  TempDir dir;
  const std::string path = dir.write("w", std::string(kBytes));
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = open_random_access_file(path);
  ASSERT_THAT(file, IsOk());
  const std::string other = dir.write("other", "another file, longer than the first");
  ASSERT_EQ(std::rename(other.c_str(), path.c_str()), 0);
  std::string out(16, '\0');
  EXPECT_THAT((*file)->read_at(0, 16, out.data()), IsOk());
  EXPECT_EQ(out, kBytes);  // the descriptor holds the old inode
}

}  // namespace
}  // namespace diffusiond
