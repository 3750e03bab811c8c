// Owning handles for the FFmpeg objects core/video uses: each frees its
// object with FFmpeg's own call, so every return path releases it.
//
// Not here: the in-memory IO (memory_io.h), errors (av_status.h).
#ifndef DIFFUSIOND_CORE_VIDEO_INTERNAL_AV_HANDLES_H_
#define DIFFUSIOND_CORE_VIDEO_INTERNAL_AV_HANDLES_H_

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <memory>

namespace diffusiond {
namespace video_internal {

struct FormatContextFree {
  void operator()(AVFormatContext* p) const { avformat_free_context(p); }
};
struct CodecContextFree {
  void operator()(AVCodecContext* p) const { avcodec_free_context(&p); }
};
struct FrameFree {
  void operator()(AVFrame* p) const { av_frame_free(&p); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsFree {
  void operator()(SwsContext* p) const { sws_freeContext(p); }
};

// A muxer's context; it does not own its pb (see memory_io.h).
using FormatContextPtr = std::unique_ptr<AVFormatContext, FormatContextFree>;
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextFree>;
using FramePtr = std::unique_ptr<AVFrame, FrameFree>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;
using SwsContextPtr = std::unique_ptr<SwsContext, SwsFree>;

// An AVDictionary that frees itself; FFmpeg's calls take &dict.
struct Dictionary {
  AVDictionary* dict = nullptr;
  Dictionary() = default;
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;
  ~Dictionary() { av_dict_free(&dict); }
};

}  // namespace video_internal
}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_VIDEO_INTERNAL_AV_HANDLES_H_
