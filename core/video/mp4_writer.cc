#include "core/video/mp4_writer.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/cpu.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "core/models/common/tensor_text.h"
#include "core/precision/torch_dtype.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"
#include "core/util/utf8.h"
#include "core/video/internal/av_handles.h"
#include "core/video/internal/av_status.h"
#include "core/video/internal/memory_io.h"

namespace diffusiond {
namespace {

using video_internal::CodecContextPtr;
using video_internal::Dictionary;
using video_internal::FfmpegErrorScope;
using video_internal::FormatContextPtr;
using video_internal::FramePtr;
using video_internal::IoContextPtr;
using video_internal::MemoryCursor;
using video_internal::PacketPtr;
using video_internal::SwsContextPtr;

constexpr int kMaxFps = 240;
constexpr int kMaxCrf = 51;
constexpr int kMaxThreads = 16;

absl::Status check_format(const VideoFormat& format) {
  for (const auto& [name, side] : {std::pair<const char*, int64_t>{"width", format.width},
                                   std::pair<const char*, int64_t>{"height", format.height}}) {
    if (side < 1 || side > kMaxVideoSide || side % 2 != 0) {
      return absl::InvalidArgumentError(absl::StrCat("video ", name, " is ", side,
                                                     ", but H.264 in yuv420p needs an even number from 2 to ",
                                                     kMaxVideoSide));
    }
  }
  if (format.fps < 1 || format.fps > kMaxFps) {
    return absl::InvalidArgumentError(absl::StrCat("video fps is ", format.fps, ", expected 1 to ", kMaxFps));
  }
  if (format.crf < 0 || format.crf > kMaxCrf) {
    return absl::InvalidArgumentError(absl::StrCat("video crf is ", format.crf, ", expected 0 to ", kMaxCrf));
  }
  if (format.threads < 0 || format.threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("video encoder threads is ", format.threads, ", expected 0 to ", kMaxThreads));
  }
  return absl::OkStatus();
}

absl::Status check_metadata(const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::vector<absl::string_view> seen;
  for (const auto& [key, value] : metadata) {
    if (std::find(std::begin(kMp4MetadataKeys), std::end(kMp4MetadataKeys), key) ==
        std::end(kMp4MetadataKeys)) {
      return absl::InvalidArgumentError(absl::StrCat("mp4 metadata key '", key,
                                                     "' is not one the mp4 muxer writes; expected one of ",
                                                     absl::StrJoin(kMp4MetadataKeys, ", ")));
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return absl::InvalidArgumentError(absl::StrCat("mp4 metadata key '", key, "' is given twice"));
    }
    seen.push_back(key);
    if (value.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("mp4 metadata '", key, "' has a NUL byte"));
    }
    DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(value, absl::StrCat("mp4 metadata '", key, "'")));
  }
  return absl::OkStatus();
}

// Returns the encoders to try, in order; FAILED_PRECONDITION naming what was
// looked for when there is none, INVALID_ARGUMENT for a named non-H.264 one.
absl::StatusOr<std::vector<const AVCodec*>> find_encoders(const std::vector<std::string>& names) {
  std::vector<const AVCodec*> found;
  std::string looked_for;
  auto add = [&found](const AVCodec* codec) {
    if (codec != nullptr && std::find(found.begin(), found.end(), codec) == found.end()) {
      found.push_back(codec);
    }
  };
  if (names.empty()) {
    add(avcodec_find_encoder_by_name("libx264"));
    add(avcodec_find_encoder(AV_CODEC_ID_H264));
    looked_for = "libx264 and avcodec_find_encoder(AV_CODEC_ID_H264)";
  } else {
    for (const std::string& name : names) {
      const AVCodec* codec = avcodec_find_encoder_by_name(name.c_str());
      if (codec != nullptr && codec->id != AV_CODEC_ID_H264) {
        return absl::InvalidArgumentError(
            absl::StrCat("encoder '", name, "' encodes ", avcodec_get_name(codec->id), ", not h264"));
      }
      add(codec);
    }
    looked_for = absl::StrJoin(names, ", ");
  }
  if (found.empty()) {
    const unsigned version = avcodec_version();
    return absl::FailedPreconditionError(
        absl::StrCat("this process's libavcodec (", AV_VERSION_MAJOR(version), ".", AV_VERSION_MINOR(version),
                     ".", AV_VERSION_MICRO(version), ") has no H.264 encoder: looked for ", looked_for,
                     " (Debian's libavcodec59 has libx264)"));
  }
  return found;
}

}  // namespace

struct Mp4Writer::State {
  enum class Phase { kOpen, kFinished, kFailed };

  // Declaration order is teardown order reversed: the format context refers
  // to the IO context, which refers to the cursor, which refers to the bytes.
  std::string bytes;
  MemoryCursor cursor{&bytes};
  IoContextPtr io;
  FormatContextPtr format;
  CodecContextPtr codec;
  SwsContextPtr sws;
  FramePtr frame;
  PacketPtr packet;
  AVStream* stream = nullptr;  // owned by format
  VideoFormat video;
  int64_t frames = 0;
  Phase phase = Phase::kOpen;
  std::string failure;  // why phase is kFailed

  // Sends `input` (nullptr: flush) to the encoder and writes every packet it
  // gives back.
  absl::Status encode(const AVFrame* input, const FfmpegErrorScope& errors) {
    int rc = avcodec_send_frame(codec.get(), input);
    if (rc < 0) return errors.error(rc, "the H.264 encoder (send a frame)");
    while (true) {
      rc = avcodec_receive_packet(codec.get(), packet.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return absl::OkStatus();
      if (rc < 0) return errors.error(rc, "the H.264 encoder (receive a packet)");
      av_packet_rescale_ts(packet.get(), codec->time_base, stream->time_base);
      packet->stream_index = stream->index;
      rc = av_interleaved_write_frame(format.get(), packet.get());  // unrefs the packet
      if (rc < 0) return io_error(rc, "the mp4 muxer (write a frame)", errors);
    }
  }

  // The error of a muxer call: out of memory where the buffer could not grow.
  absl::Status io_error(int rc, absl::string_view what, const FfmpegErrorScope& errors) const {
    if (cursor.out_of_memory) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory growing the MP4 past ", bytes.size(), " bytes"));
    }
    return errors.error(rc, what);
  }

  // Spends the writer on a failed encoder or muxer call.
  absl::Status fail(absl::Status status) {
    phase = Phase::kFailed;
    failure = std::string(status.message());
    return status;
  }

  // Opens `encoder` into `codec` for `video`; the error says why not.
  absl::Status open_encoder(const AVCodec* encoder, const FfmpegErrorScope& errors) {
    codec.reset(avcodec_alloc_context3(encoder));
    if (codec == nullptr) return absl::ResourceExhaustedError("out of memory for an encoder");
    codec->width = static_cast<int>(video.width);
    codec->height = static_cast<int>(video.height);
    codec->pix_fmt = AV_PIX_FMT_YUV420P;
    codec->time_base = AVRational{1, video.fps};
    codec->framerate = AVRational{video.fps, 1};
    codec->color_range = AVCOL_RANGE_MPEG;
    codec->colorspace = AVCOL_SPC_SMPTE170M;  // BT.601's matrix, as swscale converts below
    // x264's output depends on its thread count (VideoFormat::threads).
    codec->thread_count = video.threads;
    if ((format->oformat->flags & AVFMT_GLOBALHEADER) != 0) {
      codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;  // mp4 keeps SPS/PPS in avcC
    }
    Dictionary options;
    // An encoder without a "crf" option leaves it in the dictionary: ignored.
    int rc = av_dict_set_int(&options.dict, "crf", video.crf, 0);
    if (rc >= 0 && absl::string_view(encoder->name) == "libx264") {
      rc = av_dict_set(&options.dict, "profile", "high", 0);
      // x264's AVX-512 code (core 164, Debian 12's) makes its output depend
      // on uninitialised memory: the same frames gave other bytes from one
      // run to the next (and under MALLOC_PERTURB_ in the ffmpeg program).
      // Its AVX2 code and below give one output, the C code's, so an
      // AVX-512 CPU runs x264's AVX2 code (which every AVX-512 CPU has).
      if (rc >= 0 && (av_get_cpu_flags() & AV_CPU_FLAG_AVX512) != 0) {
        rc = av_dict_set(&options.dict, "x264-params", "asm=AVX2", 0);
      }
    }
    if (rc < 0) return errors.error(rc, "setting the encoder's options");
    rc = avcodec_open2(codec.get(), encoder, &options.dict);
    if (rc < 0) return errors.error(rc, absl::StrCat("opening encoder ", encoder->name));
    return absl::OkStatus();
  }

  absl::Status check_open(absl::string_view call) const {
    switch (phase) {
      case Phase::kOpen:
        return absl::OkStatus();
      case Phase::kFinished:
        return absl::FailedPreconditionError(absl::StrCat("Mp4Writer::", call, " after finish()"));
      case Phase::kFailed:
        return absl::FailedPreconditionError(
            absl::StrCat("Mp4Writer::", call, " after an earlier error: ", failure));
    }
    return absl::OkStatus();
  }
};

Mp4Writer::Mp4Writer(std::unique_ptr<State> state) : state_(std::move(state)) {}

Mp4Writer::~Mp4Writer() = default;

absl::StatusOr<std::unique_ptr<Mp4Writer>> Mp4Writer::open(
    const VideoFormat& format, const std::vector<std::pair<std::string, std::string>>& metadata) {
  DIFFUSIOND_RETURN_IF_ERROR(check_format(format));
  DIFFUSIOND_RETURN_IF_ERROR(check_metadata(metadata));
  FfmpegErrorScope errors;
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<const AVCodec*> encoders, find_encoders(format.encoders));
  auto state = std::make_unique<State>();
  state->video = format;

  AVFormatContext* muxer = nullptr;
  int rc = avformat_alloc_output_context2(&muxer, nullptr, "mp4", nullptr);
  if (rc < 0) return errors.error(rc, "allocating the mp4 muxer");
  state->format.reset(muxer);
  state->io = video_internal::open_memory_writer(&state->cursor);
  if (state->io == nullptr) return absl::ResourceExhaustedError("out of memory for the MP4's IO");
  video_internal::attach_memory_output(muxer, state->io.get(), &state->bytes);
  for (const auto& [key, value] : metadata) {
    rc = av_dict_set(&muxer->metadata, key.c_str(), value.c_str(), 0);
    if (rc < 0) return errors.error(rc, "setting the MP4's metadata");
  }

  std::vector<std::string> refusals;
  for (const AVCodec* encoder : encoders) {
    FfmpegErrorScope attempt;
    absl::Status opened = state->open_encoder(encoder, attempt);
    if (opened.ok()) break;
    if (absl::IsResourceExhausted(opened)) return opened;
    state->codec.reset();
    refusals.emplace_back(opened.message());
  }
  if (state->codec == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("no H.264 encoder opened: ", absl::StrJoin(refusals, "; ")));
  }

  state->stream = avformat_new_stream(muxer, nullptr);
  if (state->stream == nullptr) return absl::ResourceExhaustedError("out of memory for the MP4's stream");
  rc = avcodec_parameters_from_context(state->stream->codecpar, state->codec.get());
  if (rc < 0) return errors.error(rc, "copying the encoder's parameters to the MP4");
  state->stream->time_base = state->codec->time_base;  // a hint; the muxer may choose another
  state->stream->avg_frame_rate = state->codec->framerate;
  Dictionary muxer_options;
  rc = av_dict_set(&muxer_options.dict, "movflags", "+faststart", 0);
  if (rc < 0) return errors.error(rc, "setting the mp4 muxer's options");
  rc = avformat_write_header(muxer, &muxer_options.dict);
  if (rc < 0) return state->io_error(rc, "the mp4 muxer (write the header)", errors);
  if (av_dict_count(muxer_options.dict) != 0) {
    return absl::InternalError("the mp4 muxer did not take movflags=+faststart");
  }

  state->frame.reset(av_frame_alloc());
  state->packet.reset(av_packet_alloc());
  if (state->frame == nullptr || state->packet == nullptr) {
    return absl::ResourceExhaustedError("out of memory for a video frame");
  }
  AVFrame& frame = *state->frame;
  frame.format = AV_PIX_FMT_YUV420P;
  frame.width = state->codec->width;
  frame.height = state->codec->height;
  frame.color_range = state->codec->color_range;
  frame.colorspace = state->codec->colorspace;
  rc = av_frame_get_buffer(&frame, 0);
  if (rc < 0) return errors.error(rc, "allocating a video frame");
  // What the ffmpeg program does between rgb24 and yuv420p (its default
  // scaler flags are bicubic): BT.601 coefficients, RGB full range in,
  // limited (16-235 luma, 16-240 chroma) out.
  state->sws.reset(sws_getContext(frame.width, frame.height, AV_PIX_FMT_RGB24, frame.width, frame.height,
                                  AV_PIX_FMT_YUV420P, SWS_BICUBIC, nullptr, nullptr, nullptr));
  if (state->sws == nullptr) return absl::InternalError("swscale refused rgb24 to yuv420p");
  const int* bt601 = sws_getCoefficients(SWS_CS_ITU601);
  rc = sws_setColorspaceDetails(state->sws.get(), bt601, /*srcRange=*/1, bt601, /*dstRange=*/0,
                                /*brightness=*/0, /*contrast=*/1 << 16, /*saturation=*/1 << 16);
  if (rc < 0) return absl::InternalError("swscale refused BT.601 limited range");
  return std::unique_ptr<Mp4Writer>(new Mp4Writer(std::move(state)));
}

absl::Status Mp4Writer::add_frame(const torch::Tensor& rgb) {
  State& s = *state_;
  DIFFUSIOND_RETURN_IF_ERROR(s.check_open("add_frame"));
  if (!rgb.defined() || rgb.scalar_type() != torch::kUInt8 || rgb.dim() != 3 ||
      rgb.size(0) != s.video.height || rgb.size(1) != s.video.width || rgb.size(2) != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "video frame ", s.frames, " is ",
        rgb.defined() ? absl::StrCat(scalar_type_name(rgb.scalar_type()), " ", shape_of(rgb)) : "undefined",
        ", but the writer expects uint8 [", s.video.height, ", ", s.video.width, ", 3] RGB"));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor pixels,
                              status_of("reading a video frame", [&]() -> absl::StatusOr<torch::Tensor> {
                                return rgb.to(torch::kCPU).contiguous();
                              }));
  FfmpegErrorScope errors;
  // The encoder may still hold the previous frame's buffer (lookahead).
  int rc = av_frame_make_writable(s.frame.get());
  if (rc < 0) return s.fail(errors.error(rc, "allocating a video frame"));
  const uint8_t* const planes[1] = {pixels.data_ptr<uint8_t>()};
  const int strides[1] = {static_cast<int>(s.video.width * 3)};
  rc = sws_scale(s.sws.get(), planes, strides, 0, static_cast<int>(s.video.height), s.frame->data,
                 s.frame->linesize);
  if (rc < 0) return s.fail(errors.error(rc, "converting a frame to yuv420p"));
  s.frame->pts = s.frames;  // in 1/fps
  absl::Status encoded = s.encode(s.frame.get(), errors);
  if (!encoded.ok()) return s.fail(std::move(encoded));
  ++s.frames;
  return absl::OkStatus();
}

int64_t Mp4Writer::frames() const { return state_->frames; }

std::string Mp4Writer::encoder_name() const { return state_->codec->codec->name; }

absl::StatusOr<std::string> Mp4Writer::finish() {
  State& s = *state_;
  DIFFUSIOND_RETURN_IF_ERROR(s.check_open("finish"));
  if (s.frames == 0) {
    return s.fail(absl::FailedPreconditionError("Mp4Writer::finish with no frame: an MP4 needs one"));
  }
  FfmpegErrorScope errors;
  absl::Status flushed = s.encode(nullptr, errors);
  if (!flushed.ok()) return s.fail(std::move(flushed));
  // Writes the moov, then (faststart) reads the file back through the
  // reader attach_memory_output installed, to move the moov in front.
  const int rc = av_write_trailer(s.format.get());
  if (rc < 0 || s.cursor.out_of_memory) {
    return s.fail(s.io_error(rc, "the mp4 muxer (write the trailer)", errors));
  }
  s.phase = State::Phase::kFinished;
  return std::move(s.bytes);
}

}  // namespace diffusiond
