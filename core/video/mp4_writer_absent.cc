// core/video/mp4_writer.h in a build without FFmpeg's headers (a GPU
// machine that carries only what core/ needs): every video is refused, so a
// request for one fails with a Status instead of the build failing.
#include "core/video/mp4_writer.h"

namespace diffusiond {

struct Mp4Writer::State {};

Mp4Writer::Mp4Writer(std::unique_ptr<State> state) : state_(std::move(state)) {}

Mp4Writer::~Mp4Writer() = default;

absl::StatusOr<std::unique_ptr<Mp4Writer>> Mp4Writer::open(
    const VideoFormat&, const std::vector<std::pair<std::string, std::string>>&) {
  return absl::FailedPreconditionError(
      "this build has no MP4 writer: FFmpeg's libraries were not found when it was configured "
      "(Debian: libavformat-dev libavcodec-dev libavutil-dev libswscale-dev)");
}

// No writer exists in this build, so nothing below runs.
absl::Status Mp4Writer::add_frame(const torch::Tensor&) {
  return absl::FailedPreconditionError("this build has no MP4 writer");
}

int64_t Mp4Writer::frames() const { return 0; }

std::string Mp4Writer::encoder_name() const { return ""; }

absl::StatusOr<std::string> Mp4Writer::finish() {
  return absl::FailedPreconditionError("this build has no MP4 writer");
}

}  // namespace diffusiond
