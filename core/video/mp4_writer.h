// Mp4Writer: uint8 RGB frames in, one in-memory MP4 (H.264) out, over
// Debian's FFmpeg libraries (libavformat's mp4 muxer, libavcodec's libx264,
// libswscale).
//
// What the file is, and how it compares to upstream: diffusers'
// export_to_video hands frames to the ffmpeg program through imageio-ffmpeg,
// which runs `-vcodec libx264 -pix_fmt yuv420p -crf 25` (its quality=5) at
// the caller's fps, with ffmpeg's own conversion (swscale, bicubic chroma,
// BT.601 matrix, limited range) and x264's default preset (medium). This
// writer does the same with two differences: crf defaults to 18 (see
// VideoFormat::crf), and the moov atom is moved to the front ("faststart"),
// so that a browser or player can start before the whole file has arrived.
// The stream is tagged as BT.601 limited range, which upstream's file leaves
// unsaid (players then guess BT.709 for HD sizes and shift the colours).
//
// Not here: turning a decoded video tensor into uint8 frames
// (core/models/vae/image_postprocess.h), files (callers write the bytes),
// audio, other containers or codecs, decoding.
#ifndef DIFFUSIOND_CORE_VIDEO_MP4_WRITER_H_
#define DIFFUSIOND_CORE_VIDEO_MP4_WRITER_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace diffusiond {

// The largest side Mp4Writer accepts: above H.264's largest level (8192 x
// 4320) and any video this daemon makes, and small enough that sizes and
// strides stay far inside an int, which FFmpeg's fields are.
inline constexpr int64_t kMaxVideoSide = 16384;

// The mp4 metadata keys Mp4Writer writes (as iTunes-style ilst atoms, which
// players and ffprobe show): libavformat's mp4 muxer drops any other key
// without a word, so open() refuses them instead.
inline constexpr const char* kMp4MetadataKeys[] = {"title",     "artist",      "album",    "date",
                                                   "comment",   "description", "synopsis", "genre",
                                                   "copyright", "keywords"};

struct VideoFormat {
  // Frame size in pixels. H.264 in yuv420p halves the chroma planes, so both
  // sides must be even: 2 to kMaxVideoSide each.
  int64_t width = 0, height = 0;
  // Frames per second, 1 to 240. WanPipeline's videos are exported at 16.
  int fps = 16;
  // x264's constant rate factor, 0 (lossless) to 51 (worst). 18 is x264's
  // "visually lossless" point; upstream's export_to_video uses 25. Encoders
  // other than libx264 that have no "crf" option ignore it.
  int crf = 18;
  // Encoder threads, 0 to 16. 1 (the default) makes the bytes the same for
  // the same frames on machines of any core count; 0 lets the encoder
  // choose (x264: about 1.5 per core), faster on a many-core machine but
  // its bytes then depend on the core count. With one thread, libx264 spent
  // about 50 ms of a core on an 832x480 frame and 120 ms on a 1280x720 one.
  int threads = 1;
  // The encoders to try, by libavcodec name, in order; the first that opens
  // is used. Empty (the default): "libx264", then whatever encoder
  // avcodec_find_encoder(AV_CODEC_ID_H264) gives. A named encoder that is
  // not H.264 is refused (INVALID_ARGUMENT).
  std::vector<std::string> encoders;
};

// Encodes uint8 RGB frames into an in-memory MP4: H.264 (High profile with
// libx264), yuv420p, faststart. Frames are pushed one at a time as they are
// decoded, so no caller holds all frames; the writer holds only the
// encoder's lookahead (x264 keeps about 40 frames) and the file so far: RSS
// grew by about 90 MB over 81 frames at 832x480 and 190 MB over 121 frames
// at 1280x720, one thread. The same frames and format give the same bytes
// (see VideoFormat::threads).
//
// FFmpeg's log goes nowhere (no stderr); the error-level lines it logs
// during a failing call end up in that call's Status message.
//
// Not thread-safe; one writer per video. Distinct writers may run on
// distinct threads at once.
class Mp4Writer {
 public:
  // Returns a writer for `format`, with `metadata` as the MP4's metadata
  // tags in order (e.g. "comment" = the generation parameters as JSON, as
  // the PNG's "parameters" chunk). INVALID_ARGUMENT for a bad format (odd,
  // non-positive or too large sides; fps, crf or threads out of range; a
  // named encoder that is not H.264), a key outside kMp4MetadataKeys or
  // repeated, or a value with a NUL byte or invalid UTF-8. FAILED_PRECONDITION
  // (never a crash) when no encoder looked for exists in this process's
  // libavcodec, or none of them opens (naming each and why), and in a build
  // without FFmpeg (DIFFUSIOND_WITH_FFMPEG, docs/building.md).
  static absl::StatusOr<std::unique_ptr<Mp4Writer>> open(
      const VideoFormat& format, const std::vector<std::pair<std::string, std::string>>& metadata);

  ~Mp4Writer();
  Mp4Writer(const Mp4Writer&) = delete;
  Mp4Writer& operator=(const Mp4Writer&) = delete;

  // Appends one frame: uint8 [height, width, 3] RGB, on any device,
  // contiguous or not; the writer keeps no reference to it. INVALID_ARGUMENT
  // for another dtype or shape (the writer stays usable). FAILED_PRECONDITION
  // after finish() or after an earlier encoder or muxer error, which spends
  // the writer (INTERNAL, with FFmpeg's message; RESOURCE_EXHAUSTED when
  // memory runs out).
  absl::Status add_frame(const torch::Tensor& rgb);

  // Returns the number of frames add_frame accepted.
  int64_t frames() const;

  // Returns the name of the encoder in use, e.g. "libx264".
  std::string encoder_name() const;

  // Flushes the encoder, writes the trailer (moving the moov atom to the
  // front) and returns the whole file, which the caller owns. The writer is
  // spent afterwards, whatever the outcome. FAILED_PRECONDITION if no frame
  // was added, on a second call, or after an earlier error; INTERNAL or
  // RESOURCE_EXHAUSTED as add_frame.
  absl::StatusOr<std::string> finish();

 private:
  struct State;  // the FFmpeg contexts, in mp4_writer.cc
  explicit Mp4Writer(std::unique_ptr<State> state);

  std::unique_ptr<State> state_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VIDEO_MP4_WRITER_H_
