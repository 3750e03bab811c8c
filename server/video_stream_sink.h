// VideoStreamSink: the VideoSink of one Generate call (core/pipeline/
// video_sink.h) — each video as the request's video_format asks, sent on the
// call's stream as GenerateEvents: PNG frames one by one as they decode, or
// an H.264 MP4 assembled frame by frame and sent after its last frame.
//
// Not here: the MP4 and PNG encoders (core/video, core/image), the stream.
#ifndef DIFFUSIOND_SERVER_VIDEO_STREAM_SINK_H_
#define DIFFUSIOND_SERVER_VIDEO_STREAM_SINK_H_

#include <functional>
#include <memory>

#include "core/pipeline/video_sink.h"
#include "diffusiond/v1/pipeline_service.pb.h"

namespace diffusiond {

class Mp4Writer;  // core/video/mp4_writer.h

class VideoStreamSink final : public VideoSink {
 public:
  // `send` queues one event on the call's stream; it must outlive the sink.
  VideoStreamSink(v1::VideoFormat format, std::function<void(v1::GenerateEvent)> send);
  ~VideoStreamSink() override;

  // MP4: FAILED_PRECONDITION when this process has no H.264 encoder, found
  // by opening one writer of that format (the writer's own refusals too).
  absl::Status check(int64_t width, int64_t height, int fps) override;
  absl::Status begin(const VideoHeader& video) override;
  absl::Status add_frame(const torch::Tensor& rgb) override;
  // Sends the video's Video event.
  absl::Status finish() override;

 private:
  const v1::VideoFormat format_;
  const std::function<void(v1::GenerateEvent)> send_;
  VideoHeader video_;
  int64_t frame_ = 0;
  std::unique_ptr<Mp4Writer> mp4_;  // the video in progress, with VIDEO_FORMAT_MP4
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_VIDEO_STREAM_SINK_H_
