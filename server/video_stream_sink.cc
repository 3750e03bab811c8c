#include "server/video_stream_sink.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/image/png.h"
#include "core/util/status_macros.h"

namespace diffusiond {

// Filled in when the MP4 writer is available.
struct VideoStreamSink::Encoder {};

VideoStreamSink::VideoStreamSink(v1::VideoFormat format, std::function<void(v1::GenerateEvent)> send)
    : format_(format == v1::VIDEO_FORMAT_UNSPECIFIED ? v1::VIDEO_FORMAT_MP4 : format), send_(std::move(send)) {}

VideoStreamSink::~VideoStreamSink() = default;

absl::Status VideoStreamSink::check(int64_t, int64_t, int) {
  if (format_ == v1::VIDEO_FORMAT_PNG_FRAMES) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "video_format MP4: this daemon has no MP4 writer yet; ask for VIDEO_FORMAT_PNG_FRAMES; nothing was loaded");
}

absl::Status VideoStreamSink::begin(const VideoHeader& video) {
  video_ = video;
  frame_ = 0;
  return absl::OkStatus();
}

absl::Status VideoStreamSink::add_frame(const torch::Tensor& rgb) {
  if (rgb.dim() != 3 || rgb.size(0) != video_.height || rgb.size(1) != video_.width || rgb.size(2) != 3 ||
      rgb.scalar_type() != torch::kUInt8) {
    return absl::InternalError(absl::StrCat("a frame of video ", video_.index, " is [", absl::StrJoin(rgb.sizes(), ", "),
                                            "], not uint8 [", video_.height, ", ", video_.width, ", 3]"));
  }
  const torch::Tensor pixels = rgb.contiguous();
  v1::GenerateEvent event;
  v1::VideoFrame* frame = event.mutable_frame();
  DIFFUSIOND_ASSIGN_OR_RETURN(std::string png,
                              encode_png(pixels.data_ptr<uint8_t>(), video_.width, video_.height, {}));
  frame->set_png(std::move(png));
  frame->set_index(video_.index);
  frame->set_frame(static_cast<int32_t>(frame_));
  ++frame_;
  send_(std::move(event));
  return absl::OkStatus();
}

absl::Status VideoStreamSink::finish() {
  v1::GenerateEvent event;
  v1::Video* video = event.mutable_video();
  video->set_width(static_cast<int32_t>(video_.width));
  video->set_height(static_cast<int32_t>(video_.height));
  video->set_frames(static_cast<int32_t>(frame_));
  video->set_fps(video_.fps);
  video->set_seed(video_.seed);
  video->set_index(video_.index);
  for (const auto& [key, value] : video_.parameters) {
    if (key == "parameters") video->set_parameters(value);
  }
  send_(std::move(event));
  return absl::OkStatus();
}

}  // namespace diffusiond
