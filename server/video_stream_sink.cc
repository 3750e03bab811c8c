#include "server/video_stream_sink.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/image/png.h"
#include "core/util/status_macros.h"
#include "core/video/mp4_writer.h"

namespace diffusiond {

namespace {

VideoFormat mp4_format(int64_t width, int64_t height, int fps) {
  VideoFormat format;
  format.width = width;
  format.height = height;
  format.fps = fps;
  return format;
}

// `s` from opening an MP4 writer, naming the field that asked for it.
absl::Status mp4_refused(const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("video_format MP4: ", s.message()));
}

}  // namespace

VideoStreamSink::VideoStreamSink(v1::VideoFormat format, std::function<void(v1::GenerateEvent)> send)
    : format_(format == v1::VIDEO_FORMAT_UNSPECIFIED ? v1::VIDEO_FORMAT_MP4 : format), send_(std::move(send)) {}

VideoStreamSink::~VideoStreamSink() = default;

// Opening a writer is the one way to know an encoder opens at this size: a
// probe costs x264's setup, milliseconds.
absl::Status VideoStreamSink::check(int64_t width, int64_t height, int fps) {
  if (format_ == v1::VIDEO_FORMAT_PNG_FRAMES) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<Mp4Writer>> probe = Mp4Writer::open(mp4_format(width, height, fps), {});
  if (!probe.ok()) {
    return absl::Status(probe.status().code(), absl::StrCat(mp4_refused(probe.status()).message(),
                                                            "; ask for VIDEO_FORMAT_PNG_FRAMES; nothing was loaded"));
  }
  return absl::OkStatus();
}

absl::Status VideoStreamSink::begin(const VideoHeader& video) {
  video_ = video;
  frame_ = 0;
  mp4_.reset();
  if (format_ != v1::VIDEO_FORMAT_MP4) return absl::OkStatus();
  // The MP4's "comment" is what an image's PNG keeps as "parameters".
  std::vector<std::pair<std::string, std::string>> metadata;
  for (const auto& [key, value] : video.parameters) {
    if (key == "parameters") metadata.emplace_back("comment", value);
  }
  absl::StatusOr<std::unique_ptr<Mp4Writer>> writer =
      Mp4Writer::open(mp4_format(video.width, video.height, video.fps), metadata);
  if (!writer.ok()) return mp4_refused(writer.status());
  mp4_ = *std::move(writer);
  return absl::OkStatus();
}

absl::Status VideoStreamSink::add_frame(const torch::Tensor& rgb) {
  if (rgb.dim() != 3 || rgb.size(0) != video_.height || rgb.size(1) != video_.width || rgb.size(2) != 3 ||
      rgb.scalar_type() != torch::kUInt8) {
    return absl::InternalError(absl::StrCat("a frame of video ", video_.index, " is [", absl::StrJoin(rgb.sizes(), ", "),
                                            "], not uint8 [", video_.height, ", ", video_.width, ", 3]"));
  }
  if (mp4_ != nullptr) {
    ++frame_;
    return mp4_->add_frame(rgb);
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
  if (mp4_ != nullptr) {
    absl::StatusOr<std::string> file = mp4_->finish();
    mp4_.reset();
    if (!file.ok()) return file.status();
    video->set_mp4(*std::move(file));
  }
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
