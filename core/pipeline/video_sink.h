// VideoSink: where a Generate of a video family (Wan) puts its videos,
// frame by frame as the VAE decodes them, so that no video is ever held
// whole in float: the daemon's sinks encode an MP4 or PNG frames and stream
// them, a test's sink keeps the frames.
//
// Not here: running the pipeline (generate.h), the MP4 or PNG encoders.
#ifndef DIFFUSIOND_CORE_PIPELINE_VIDEO_SINK_H_
#define DIFFUSIOND_CORE_PIPELINE_VIDEO_SINK_H_

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace diffusiond {

// One video of a Generate, as it begins.
struct VideoHeader {
  int index = 0;  // its place among num_images_per_prompt (0-based)
  uint64_t seed = 0;
  int64_t width = 0, height = 0;  // pixels
  int64_t frames = 0;             // what will follow
  int fps = 16;                   // the family's frame rate
  // What made it ("parameters": JSON), as an image's PNG text chunks.
  std::vector<std::pair<std::string, std::string>> parameters;
};

// Called by one Generate at a time, from its thread: check() before any
// load, then per video begin(), add_frame() for each frame in order, and
// finish(). An error from any of them stops the Generate with it.
class VideoSink {
 public:
  virtual ~VideoSink() = default;

  // Before anything loads: FAILED_PRECONDITION when videos of `width` x
  // `height` at `fps` cannot be written here (no H.264 encoder).
  virtual absl::Status check(int64_t width, int64_t height, int fps) = 0;
  virtual absl::Status begin(const VideoHeader& video) = 0;
  // `rgb` is uint8 [height, width, 3].
  virtual absl::Status add_frame(const torch::Tensor& rgb) = 0;
  virtual absl::Status finish() = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_VIDEO_SINK_H_
