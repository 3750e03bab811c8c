// An FFmpeg output in memory: a seekable AVIOContext over a growable
// std::string, and the muxer hooks that reopen it for reading.
//
// The mp4 muxer writes, seeks back to patch box sizes, and for faststart
// reopens its output for reading (AVFormatContext::io_open) to shift the
// media data behind the moov it then writes in front. FFmpeg's default
// io_open would open s->url as a file, which a custom output has not got;
// attach_memory_output installs an io_open that gives a reader over the
// same bytes instead. The reader runs ahead of the writer, as it does over
// a real file, so it reads bytes that are not yet overwritten.
//
// Not here: the FFmpeg objects (av_handles.h), errors (av_status.h).
#ifndef DIFFUSIOND_CORE_VIDEO_INTERNAL_MEMORY_IO_H_
#define DIFFUSIOND_CORE_VIDEO_INTERNAL_MEMORY_IO_H_

extern "C" {
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
}

#include <cstdint>
#include <memory>
#include <string>

namespace diffusiond {
namespace video_internal {

// A position in a file held in `bytes`. Seeking past the end is allowed; a
// write there fills the gap with zeros.
struct MemoryCursor {
  std::string* bytes;
  int64_t position = 0;
  bool out_of_memory = false;  // a write could not grow `bytes`
};

struct IoContextFree {
  void operator()(AVIOContext* io) const;  // its buffer too
};
using IoContextPtr = std::unique_ptr<AVIOContext, IoContextFree>;

// Returns a writable, seekable AVIOContext over `cursor`, or nullptr when
// memory runs out. A failed write returns AVERROR(ENOMEM) to FFmpeg and
// sets cursor->out_of_memory. REQUIRES: `cursor` outlives the context.
IoContextPtr open_memory_writer(MemoryCursor* cursor);

// Makes `muxer` write through `writer` (which the caller keeps, and frees
// after `muxer`) and reopen `*bytes`, the writer's file, for reading when
// it asks io_open to (read only: a second writer is refused).
void attach_memory_output(AVFormatContext* muxer, AVIOContext* writer, std::string* bytes);

}  // namespace video_internal
}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VIDEO_INTERNAL_MEMORY_IO_H_
