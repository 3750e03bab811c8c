// FaultyFile: a RandomAccessFile over a real one whose reads meet faults by
// rule — an I/O error (EIO, ENOSPC) where a read touches a byte range, short
// reads, a file that ends early — as a failing disk or a network filesystem
// would serve them, plus a hook run before every read (to truncate or replace
// the real file mid-load). faulty_opener() puts it behind the FileOpener seam
// (OpenOptions::opener, EngineOptions::file_opener).
//
// Not here: faults at open (a FileOpener that returns a status does that).
#ifndef DIFFUSIOND_TESTS_TESTING_FAULTY_FILE_H_
#define DIFFUSIOND_TESTS_TESTING_FAULTY_FILE_H_

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/random_access_file.h"

namespace diffusiond::testing {

// One rule: what the preads of a read that touches [begin, end) of the file
// get. Reads that touch no rule go to the real file untouched.
struct ReadFault {
  enum class Kind {
    kErrno,       // bytes before `begin` arrive, then pread fails with `error`
    kShortReads,  // every pread returns at most `short_bytes`; nothing fails
    kEndOfFile,   // the file ends at `begin`: pread returns 0 there
  };
  Kind kind = Kind::kErrno;
  int64_t begin = 0;
  int64_t end = std::numeric_limits<int64_t>::max();
  int error = EIO;
  int64_t short_bytes = 1;

  bool touches(int64_t offset, int64_t n) const { return offset < end && offset + n > begin; }
};

// `error` (EIO by default) for a read touching [begin, end).
inline ReadFault io_error_at(int64_t begin, int64_t end, int error = EIO) {
  return ReadFault{ReadFault::Kind::kErrno, begin, end, error, 0};
}
// A device that fails with `error` for every read from `begin` on.
inline ReadFault failing_device_from(int64_t begin, int error) {
  return io_error_at(begin, std::numeric_limits<int64_t>::max(), error);
}
// Preads of at most `bytes` for reads touching [begin, end).
inline ReadFault short_reads(int64_t begin, int64_t end, int64_t bytes) {
  return ReadFault{ReadFault::Kind::kShortReads, begin, end, 0, bytes};
}
// A file that ends at `offset` for the reader, though it was longer when
// opened.
inline ReadFault ends_at(int64_t offset) {
  return ReadFault{ReadFault::Kind::kEndOfFile, offset, std::numeric_limits<int64_t>::max(), 0, 0};
}

// Thread-safe as the file it wraps, if the hook is.
class FaultyFile final : public RandomAccessFile {
 public:
  // Called with each read's offset and size before it runs.
  using ReadHook = std::function<void(int64_t offset, int64_t n)>;

  FaultyFile(std::unique_ptr<RandomAccessFile> inner, std::vector<ReadFault> faults,
             ReadHook before_read = nullptr)
      : inner_(std::move(inner)), faults_(std::move(faults)), before_read_(std::move(before_read)) {}

  const std::string& path() const override { return inner_->path(); }
  int64_t size() const override { return inner_->size(); }

  // A read that meets a rule runs through read_fully, the loop the real
  // file uses, over preads the rule shapes; so short reads, errno and an
  // early end reach that loop as a real pread would deliver them.
  absl::Status read_at(int64_t offset, int64_t n, char* dst) const override {
    if (before_read_) before_read_(offset, n);
    const ReadFault* fault = nullptr;
    for (const ReadFault& f : faults_) {
      if (f.touches(offset, n)) {
        fault = &f;
        break;
      }
    }
    if (fault == nullptr) return inner_->read_at(offset, n, dst);
    return read_fully(path(), size(), offset, n, dst, [&](char* to, int64_t count, int64_t at) -> int64_t {
      switch (fault->kind) {
        case ReadFault::Kind::kErrno:
          if (at >= fault->begin && at < fault->end) {
            errno = fault->error;
            return -1;
          }
          if (at < fault->begin) count = std::min(count, fault->begin - at);
          break;
        case ReadFault::Kind::kShortReads:
          count = std::min(count, fault->short_bytes);
          break;
        case ReadFault::Kind::kEndOfFile:
          if (at >= fault->begin) return 0;
          count = std::min(count, fault->begin - at);
          break;
      }
      if (!inner_->read_at(at, count, to).ok()) {
        errno = EIO;
        return -1;
      }
      return count;
    });
  }

 private:
  const std::unique_ptr<RandomAccessFile> inner_;
  const std::vector<ReadFault> faults_;
  const ReadHook before_read_;
};

// Opens real files and wraps each in a FaultyFile with `faults` and `hook`.
inline FileOpener faulty_opener(std::vector<ReadFault> faults, FaultyFile::ReadHook hook = nullptr) {
  return [faults = std::move(faults), hook = std::move(hook)](absl::string_view path)
             -> absl::StatusOr<std::unique_ptr<RandomAccessFile>> {
    absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = open_random_access_file(path);
    if (!file.ok()) return file.status();
    return std::unique_ptr<RandomAccessFile>(new FaultyFile(std::move(*file), faults, hook));
  };
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_FAULTY_FILE_H_
