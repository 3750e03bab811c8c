#include "core/video/internal/memory_io.h"

extern "C" {
#include <libavformat/version.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
}

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace diffusiond {
namespace video_internal {
namespace {

constexpr int kIoBufferBytes = 64 * 1024;

// FFmpeg 7 (libavformat 61) made the written bytes const; Debian 12 has 59.
#if LIBAVFORMAT_VERSION_MAJOR >= 61
using WrittenBytes = const uint8_t*;
#else
using WrittenBytes = uint8_t*;
#endif

int write_bytes(void* opaque, WrittenBytes data, int size) {
  MemoryCursor* cursor = static_cast<MemoryCursor*>(opaque);
  const size_t end = static_cast<size_t>(cursor->position) + static_cast<size_t>(size);
  try {
    if (end > cursor->bytes->size()) cursor->bytes->resize(end);
  } catch (const std::bad_alloc&) {
    cursor->out_of_memory = true;
    return AVERROR(ENOMEM);
  }
  std::memcpy(cursor->bytes->data() + cursor->position, data, static_cast<size_t>(size));
  cursor->position = static_cast<int64_t>(end);
  return size;
}

int read_bytes(void* opaque, uint8_t* data, int size) {
  MemoryCursor* cursor = static_cast<MemoryCursor*>(opaque);
  const int64_t left = static_cast<int64_t>(cursor->bytes->size()) - cursor->position;
  if (left <= 0) return AVERROR_EOF;
  const int n = static_cast<int>(std::min<int64_t>(left, size));
  std::memcpy(data, cursor->bytes->data() + cursor->position, static_cast<size_t>(n));
  cursor->position += n;
  return n;
}

int64_t seek_bytes(void* opaque, int64_t offset, int whence) {
  MemoryCursor* cursor = static_cast<MemoryCursor*>(opaque);
  const int64_t size = static_cast<int64_t>(cursor->bytes->size());
  int64_t base = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE:
      return size;
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = cursor->position;
      break;
    case SEEK_END:
      base = size;
      break;
    default:
      return AVERROR(EINVAL);
  }
  if (offset < -base) return AVERROR(EINVAL);
  cursor->position = base + offset;
  return cursor->position;
}

AVIOContext* open_io(MemoryCursor* cursor, bool writable) {
  uint8_t* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferBytes));
  if (buffer == nullptr) return nullptr;
  AVIOContext* io =
      avio_alloc_context(buffer, kIoBufferBytes, writable ? 1 : 0, cursor, writable ? nullptr : &read_bytes,
                         writable ? &write_bytes : nullptr, &seek_bytes);
  if (io == nullptr) av_free(buffer);
  return io;
}

// AVFormatContext::io_open and io_close2: a reader over the muxer's output,
// whose bytes are the format context's opaque. The reader owns its cursor.
int open_reader(AVFormatContext* muxer, AVIOContext** io, const char*, int flags, AVDictionary**) {
  if ((flags & AVIO_FLAG_WRITE) != 0) return AVERROR(EPERM);
  MemoryCursor* cursor = new (std::nothrow) MemoryCursor{static_cast<std::string*>(muxer->opaque)};
  if (cursor == nullptr) return AVERROR(ENOMEM);
  *io = open_io(cursor, /*writable=*/false);
  if (*io == nullptr) {
    delete cursor;
    return AVERROR(ENOMEM);
  }
  return 0;
}

int close_reader(AVFormatContext*, AVIOContext* io) {
  if (io == nullptr) return 0;
  delete static_cast<MemoryCursor*>(io->opaque);
  IoContextFree()(io);
  return 0;
}

}  // namespace

void IoContextFree::operator()(AVIOContext* io) const {
  if (io == nullptr) return;
  av_freep(&io->buffer);  // avio may have replaced the buffer it was given
  avio_context_free(&io);
}

IoContextPtr open_memory_writer(MemoryCursor* cursor) {
  return IoContextPtr(open_io(cursor, /*writable=*/true));
}

void attach_memory_output(AVFormatContext* muxer, AVIOContext* writer, std::string* bytes) {
  muxer->pb = writer;
  muxer->flags |= AVFMT_FLAG_CUSTOM_IO;
  muxer->opaque = bytes;
  muxer->io_open = &open_reader;
  muxer->io_close2 = &close_reader;
}

}  // namespace video_internal
}  // namespace diffusiond
