#include "core/video/internal/av_status.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
}

#include <algorithm>
#include <cerrno>
#include <cstdarg>

#include "absl/strings/str_cat.h"

namespace diffusiond {
namespace video_internal {
namespace {

thread_local std::string* t_ffmpeg_errors = nullptr;

// Enough for a few lines; a long message is cut, not grown without bound.
constexpr size_t kMaxErrorBytes = 1024;

void on_ffmpeg_log(void* avcl, int level, const char* format, va_list args) {
  if (level > AV_LOG_ERROR || t_ffmpeg_errors == nullptr) return;
  if (t_ffmpeg_errors->size() >= kMaxErrorBytes) return;
  char line[512];
  int print_prefix = 1;  // "[libx264 @ 0x...] ": names the component
  if (av_log_format_line2(avcl, level, format, args, line, sizeof(line), &print_prefix) < 0) return;
  absl::string_view text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return;
  if (!t_ffmpeg_errors->empty()) t_ffmpeg_errors->append("; ");
  t_ffmpeg_errors->append(text.data(), text.size());
}

}  // namespace

FfmpegErrorScope::FfmpegErrorScope() : outer_(t_ffmpeg_errors) {
  static const bool installed = [] {
    av_log_set_callback(&on_ffmpeg_log);
    return true;
  }();
  (void)installed;
  t_ffmpeg_errors = &errors_;
}

FfmpegErrorScope::~FfmpegErrorScope() { t_ffmpeg_errors = outer_; }

absl::Status FfmpegErrorScope::error(int code, absl::string_view what) const {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  std::string message = absl::StrCat(what, " failed: ", text);
  if (!errors_.empty()) absl::StrAppend(&message, " (FFmpeg: ", errors_, ")");
  return code == AVERROR(ENOMEM) ? absl::ResourceExhaustedError(message) : absl::InternalError(message);
}

}  // namespace video_internal
}  // namespace diffusiond
