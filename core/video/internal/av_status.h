// FFmpeg's errors as absl::Status, and FFmpeg's log kept off stderr.
//
// av_log writes to stderr by default. The first FfmpegErrorScope installs
// a process-wide callback that drops every line, except that error-level
// lines logged on a thread while a scope is open there are kept for that
// scope's statuses: FFmpeg logs a failing call's reasons on the calling
// thread (an encoder's own threads, where it has several, go unheard), and
// its return codes alone ("Invalid argument") seldom say what was wrong.
//
// Not here: the FFmpeg objects (av_handles.h), IO (memory_io.h).
#ifndef DIFFUSIOND_CORE_VIDEO_INTERNAL_AV_STATUS_H_
#define DIFFUSIOND_CORE_VIDEO_INTERNAL_AV_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace diffusiond {
namespace video_internal {

// Collects FFmpeg's error lines on this thread while it lives; scopes nest
// (the inner one collects). Not thread-safe: a scope belongs to its thread.
class FfmpegErrorScope {
 public:
  FfmpegErrorScope();
  ~FfmpegErrorScope();
  FfmpegErrorScope(const FfmpegErrorScope&) = delete;
  FfmpegErrorScope& operator=(const FfmpegErrorScope&) = delete;

  // Returns FFmpeg error code `code` from `what` (e.g. "opening encoder
  // libx264") as a Status: RESOURCE_EXHAUSTED for ENOMEM, else INTERNAL,
  // with av_strerror's text and the error lines logged in this scope.
  absl::Status error(int code, absl::string_view what) const;

 private:
  std::string* outer_;  // the enclosing scope's lines, restored on exit
  std::string errors_;
};

}  // namespace video_internal
}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VIDEO_INTERNAL_AV_STATUS_H_
