// Mp4Writer: the file libavformat (and ffprobe, where installed) reads back
// — codec, pixel format, size, frame count, frame rate, metadata, moov in
// front — decoded frames close to the input, the same bytes for the same
// frames, the encoder lookup and the refusals.
#include "core/video/mp4_writer.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/mem.h>
#include <libswscale/swscale.h>
}

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kClipWidth = 64;
constexpr int64_t kClipHeight = 48;
constexpr int kClipFrames = 9;

// Smooth content that moves from frame to frame, inside 16..235 so that
// limited range loses nothing to clipping.
torch::Tensor clip_frame(int t) {
  auto x = torch::arange(kClipWidth, torch::kInt32).view({1, kClipWidth});
  auto y = torch::arange(kClipHeight, torch::kInt32).view({kClipHeight, 1});
  auto r = (40 + 2 * x + 3 * t).expand({kClipHeight, kClipWidth});
  auto g = (60 + 2 * y + t).expand({kClipHeight, kClipWidth});
  auto b = 100 + x + y;
  return torch::stack({r, g, b}, 2).to(torch::kUInt8);
}

VideoFormat clip_format() {
  VideoFormat format;
  format.width = kClipWidth;
  format.height = kClipHeight;
  return format;
}

absl::StatusOr<std::string> encode_clip(
    const VideoFormat& format, const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  auto writer = Mp4Writer::open(format, metadata);
  if (!writer.ok()) return writer.status();
  for (int t = 0; t < kClipFrames; ++t) {
    absl::Status added = (*writer)->add_frame(clip_frame(t));
    if (!added.ok()) return added;
  }
  return (*writer)->finish();
}

// What libavformat and libavcodec read back from an MP4 in memory.
struct Mp4ReadBack {
  std::string codec;
  AVPixelFormat pix_fmt = AV_PIX_FMT_NONE;
  int profile = 0;
  int width = 0, height = 0;
  int64_t nb_frames = 0;
  AVRational avg_frame_rate{0, 1}, r_frame_rate{0, 1};
  AVColorSpace color_space = AVCOL_SPC_UNSPECIFIED;
  AVColorRange color_range = AVCOL_RANGE_UNSPECIFIED;
  std::map<std::string, std::string> tags;
  std::vector<torch::Tensor> frames;  // decoded, as uint8 [h, w, 3] RGB
};

struct Mp4Source {
  const std::string* bytes;
  int64_t position = 0;
};

int read_mp4_source(void* opaque, uint8_t* data, int size) {
  auto* source = static_cast<Mp4Source*>(opaque);
  const int64_t left = static_cast<int64_t>(source->bytes->size()) - source->position;
  if (left <= 0) return AVERROR_EOF;
  const int n = static_cast<int>(std::min<int64_t>(left, size));
  std::memcpy(data, source->bytes->data() + source->position, n);
  source->position += n;
  return n;
}

int64_t seek_mp4_source(void* opaque, int64_t offset, int whence) {
  auto* source = static_cast<Mp4Source*>(opaque);
  if (whence == AVSEEK_SIZE) return static_cast<int64_t>(source->bytes->size());
  if ((whence & ~AVSEEK_FORCE) == SEEK_CUR) offset += source->position;
  if ((whence & ~AVSEEK_FORCE) == SEEK_END) offset += static_cast<int64_t>(source->bytes->size());
  source->position = offset;
  return offset;
}

// Demuxes and decodes `bytes`; fails the test (and returns what it has) on
// any FFmpeg error.
Mp4ReadBack read_mp4(const std::string& bytes) {
  Mp4ReadBack out;
  Mp4Source source{&bytes};
  const int kBufferBytes = 4096;
  AVIOContext* io = avio_alloc_context(static_cast<uint8_t*>(av_malloc(kBufferBytes)), kBufferBytes, 0,
                                       &source, &read_mp4_source, nullptr, &seek_mp4_source);
  AVFormatContext* demuxer = avformat_alloc_context();
  demuxer->pb = io;
  AVCodecContext* decoder = nullptr;
  AVPacket* packet = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  SwsContext* to_rgb = nullptr;
  auto receive_frames = [&] {
    while (avcodec_receive_frame(decoder, frame) == 0) {
      torch::Tensor rgb = torch::empty({frame->height, frame->width, 3}, torch::kUInt8);
      if (to_rgb == nullptr) {
        to_rgb = sws_getContext(frame->width, frame->height, static_cast<AVPixelFormat>(frame->format),
                                frame->width, frame->height, AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr, nullptr,
                                nullptr);
        const int* bt601 = sws_getCoefficients(SWS_CS_ITU601);
        sws_setColorspaceDetails(to_rgb, bt601, 0, bt601, 1, 0, 1 << 16, 1 << 16);
      }
      uint8_t* planes[1] = {rgb.data_ptr<uint8_t>()};
      const int strides[1] = {frame->width * 3};
      sws_scale(to_rgb, frame->data, frame->linesize, 0, frame->height, planes, strides);
      out.frames.push_back(rgb);
    }
  };
  do {
    if (avformat_open_input(&demuxer, nullptr, nullptr, nullptr) < 0) {  // frees demuxer on failure
      ADD_FAILURE() << "libavformat cannot open the MP4";
      break;
    }
    if (avformat_find_stream_info(demuxer, nullptr) < 0 || demuxer->nb_streams != 1) {
      ADD_FAILURE() << "the MP4 has no single stream";
      break;
    }
    const AVStream* stream = demuxer->streams[0];
    const AVCodecParameters* par = stream->codecpar;
    out.codec = avcodec_get_name(par->codec_id);
    out.pix_fmt = static_cast<AVPixelFormat>(par->format);
    out.profile = par->profile;
    out.width = par->width;
    out.height = par->height;
    out.nb_frames = stream->nb_frames;
    out.avg_frame_rate = stream->avg_frame_rate;
    out.r_frame_rate = stream->r_frame_rate;
    out.color_space = par->color_space;
    out.color_range = par->color_range;
    for (const AVDictionaryEntry* e = nullptr;
         (e = av_dict_get(demuxer->metadata, "", e, AV_DICT_IGNORE_SUFFIX));) {
      out.tags[e->key] = e->value;
    }
    const AVCodec* h264 = avcodec_find_decoder(par->codec_id);
    decoder = avcodec_alloc_context3(h264);
    if (h264 == nullptr || avcodec_parameters_to_context(decoder, par) < 0 ||
        avcodec_open2(decoder, h264, nullptr) < 0) {
      ADD_FAILURE() << "no decoder for " << out.codec;
      break;
    }
    while (av_read_frame(demuxer, packet) == 0) {
      if (avcodec_send_packet(decoder, packet) < 0) ADD_FAILURE() << "the decoder refused a packet";
      av_packet_unref(packet);
      receive_frames();
    }
    avcodec_send_packet(decoder, nullptr);
    receive_frames();
  } while (false);
  sws_freeContext(to_rgb);
  av_frame_free(&frame);
  av_packet_free(&packet);
  avcodec_free_context(&decoder);
  avformat_close_input(&demuxer);
  av_freep(&io->buffer);
  avio_context_free(&io);
  return out;
}

std::string tag_of(const Mp4ReadBack& read, const std::string& key) {
  const auto it = read.tags.find(key);
  return it == read.tags.end() ? "(absent)" : it->second;
}

// The top-level box types of an MP4, in file order.
std::vector<std::string> top_level_boxes(const std::string& bytes) {
  std::vector<std::string> boxes;
  for (size_t at = 0; at + 8 <= bytes.size();) {
    uint64_t size = 0;
    for (size_t i = 0; i < 4; ++i) size = (size << 8) | static_cast<uint8_t>(bytes[at + i]);
    boxes.push_back(bytes.substr(at + 4, 4));
    if (size == 1 && at + 16 <= bytes.size()) {  // 64-bit size follows the type
      size = 0;
      for (size_t i = 8; i < 16; ++i) size = (size << 8) | static_cast<uint8_t>(bytes[at + i]);
    }
    if (size < 8) break;
    at += size;
  }
  return boxes;
}

TEST(Mp4WriterTest, WritesH264Yuv420pAtTheFrameRateWithMetadata) {
  const std::string parameters = R"({"prompt": "a cat — in the rain", "seed": 42, "steps": 4})";
  VideoFormat format = clip_format();
  format.fps = 16;
  auto writer = Mp4Writer::open(format, {{"comment", parameters}, {"title", "cat"}});
  ASSERT_THAT(writer, IsOk());
  for (int t = 0; t < kClipFrames; ++t) ASSERT_THAT((*writer)->add_frame(clip_frame(t)), IsOk());
  EXPECT_EQ((*writer)->frames(), kClipFrames);
  const std::string encoder = (*writer)->encoder_name();
  auto bytes = (*writer)->finish();
  ASSERT_THAT(bytes, IsOk());

  const Mp4ReadBack read = read_mp4(*bytes);
  EXPECT_EQ(read.codec, "h264");
  EXPECT_EQ(read.pix_fmt, AV_PIX_FMT_YUV420P);
  EXPECT_EQ(read.width, kClipWidth);
  EXPECT_EQ(read.height, kClipHeight);
  EXPECT_EQ(read.nb_frames, kClipFrames);
  EXPECT_EQ(read.frames.size(), static_cast<size_t>(kClipFrames));
  EXPECT_EQ(av_cmp_q(read.avg_frame_rate, AVRational{16, 1}), 0)
      << read.avg_frame_rate.num << "/" << read.avg_frame_rate.den;
  EXPECT_EQ(av_cmp_q(read.r_frame_rate, AVRational{16, 1}), 0)
      << read.r_frame_rate.num << "/" << read.r_frame_rate.den;
  EXPECT_EQ(read.color_space, AVCOL_SPC_SMPTE170M);
  EXPECT_EQ(read.color_range, AVCOL_RANGE_MPEG);
  EXPECT_EQ(tag_of(read, "comment"), parameters);
  EXPECT_EQ(tag_of(read, "title"), "cat");
  if (encoder == "libx264") {
    EXPECT_EQ(read.profile, FF_PROFILE_H264_HIGH);
  }

  // Faststart: the moov sits before the media data.
  const std::vector<std::string> boxes = top_level_boxes(*bytes);
  const auto moov = std::find(boxes.begin(), boxes.end(), "moov");
  const auto mdat = std::find(boxes.begin(), boxes.end(), "mdat");
  ASSERT_NE(moov, boxes.end());
  ASSERT_NE(mdat, boxes.end());
  EXPECT_LT(moov - boxes.begin(), mdat - boxes.begin());
}

TEST(Mp4WriterTest, DecodedFramesAreCloseToTheInput) {
  auto bytes = encode_clip(clip_format());
  ASSERT_THAT(bytes, IsOk());
  const Mp4ReadBack read = read_mp4(*bytes);
  ASSERT_EQ(read.frames.size(), static_cast<size_t>(kClipFrames));
  for (int t = 0; t < kClipFrames; ++t) {
    const double mean_abs_error =
        (read.frames[t].to(torch::kFloat32) - clip_frame(t).to(torch::kFloat32)).abs().mean().item<double>();
    // 1.3 to 1.5 levels with Debian's x264 at crf 18 (two conversions and
    // 4:2:0 included); the bound leaves room for other x264 builds.
    EXPECT_LT(mean_abs_error, 4.0) << "frame " << t;
  }
}

TEST(Mp4WriterTest, SameFramesGiveTheSameBytesWhateverTheirLayout) {
  auto first = encode_clip(clip_format());
  ASSERT_THAT(first, IsOk());
  auto again = encode_clip(clip_format());
  ASSERT_THAT(again, IsOk());
  EXPECT_TRUE(*first == *again) << "two encodes of the same frames differ";

  // Channels-first storage, permuted to [h, w, 3]: not contiguous.
  auto writer = Mp4Writer::open(clip_format(), {});
  ASSERT_THAT(writer, IsOk());
  for (int t = 0; t < kClipFrames; ++t) {
    const torch::Tensor strided = clip_frame(t).permute({2, 0, 1}).contiguous().permute({1, 2, 0});
    ASSERT_FALSE(strided.is_contiguous());
    ASSERT_THAT((*writer)->add_frame(strided), IsOk());
  }
  auto permuted = (*writer)->finish();
  ASSERT_THAT(permuted, IsOk());
  EXPECT_TRUE(*first == *permuted) << "a non-contiguous frame encodes differently";
}

TEST(Mp4WriterTest, SeveralEncoderThreadsWriteEveryFrame) {
  VideoFormat format = clip_format();
  format.threads = 2;
  auto bytes = encode_clip(format);
  ASSERT_THAT(bytes, IsOk());
  const Mp4ReadBack read = read_mp4(*bytes);
  EXPECT_EQ(read.nb_frames, kClipFrames);
  EXPECT_EQ(read.frames.size(), static_cast<size_t>(kClipFrames));
}

TEST(Mp4WriterTest, EveryMetadataKeyRoundTrips) {
  std::vector<std::pair<std::string, std::string>> metadata;
  for (const char* key : kMp4MetadataKeys) metadata.emplace_back(key, absl::StrCat(key, " ✓"));
  auto writer = Mp4Writer::open(clip_format(), metadata);
  ASSERT_THAT(writer, IsOk());
  ASSERT_THAT((*writer)->add_frame(clip_frame(0)), IsOk());
  auto bytes = (*writer)->finish();
  ASSERT_THAT(bytes, IsOk());
  const Mp4ReadBack read = read_mp4(*bytes);
  for (const auto& [key, value] : metadata) EXPECT_EQ(tag_of(read, key), value) << key;
}

// ffprobe, the program people use on these files, where it is installed.
TEST(Mp4WriterTest, FfprobeCountsTheFrames) {
  if (::testing::internal::posix::GetEnv("PATH") == nullptr ||
      testing::run_command("command -v ffprobe").exit_status != 0) {
    GTEST_SKIP() << "ffprobe is not on PATH";
  }
  auto bytes = encode_clip(clip_format(), {{"comment", R"({"seed": 7})"}});
  ASSERT_THAT(bytes, IsOk());
  testing::TempDir dir;
  const std::string path = dir.write("clip.mp4", *bytes);
  const testing::CommandOutput probe = testing::run_command(
      absl::StrCat("ffprobe -v error -count_frames -show_streams -show_format -of json '", path, "'"));
  ASSERT_EQ(probe.exit_status, 0);
  const nlohmann::json json = nlohmann::json::parse(absl::StrJoin(probe.lines, "\n"));
  ASSERT_EQ(json["streams"].size(), 1u);
  const nlohmann::json& stream = json["streams"][0];
  EXPECT_EQ(stream["codec_name"], "h264");
  EXPECT_EQ(stream["pix_fmt"], "yuv420p");
  EXPECT_EQ(stream["width"], kClipWidth);
  EXPECT_EQ(stream["height"], kClipHeight);
  EXPECT_EQ(stream["nb_read_frames"], std::to_string(kClipFrames));
  EXPECT_EQ(stream["avg_frame_rate"], "16/1");
  EXPECT_EQ(stream["r_frame_rate"], "16/1");
  EXPECT_EQ(json["format"]["tags"]["comment"], R"({"seed": 7})");
}

TEST(Mp4WriterTest, RefusesABadFormatOrMetadata) {
  VideoFormat odd = clip_format();
  odd.width = 63;
  EXPECT_THAT(Mp4Writer::open(odd, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("video width is 63, but H.264 in yuv420p needs an even")));
  VideoFormat empty;
  EXPECT_THAT(Mp4Writer::open(empty, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("width is 0")));
  VideoFormat huge = clip_format();
  huge.height = kMaxVideoSide + 2;
  EXPECT_THAT(Mp4Writer::open(huge, {}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("height")));
  VideoFormat still = clip_format();
  still.fps = 0;
  EXPECT_THAT(Mp4Writer::open(still, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fps is 0")));
  VideoFormat crowded = clip_format();
  crowded.threads = 17;
  EXPECT_THAT(Mp4Writer::open(crowded, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("threads is 17, expected 0 to 16")));
  VideoFormat blocky = clip_format();
  blocky.crf = 52;
  EXPECT_THAT(Mp4Writer::open(blocky, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("crf is 52")));

  EXPECT_THAT(Mp4Writer::open(clip_format(), {{"parameters", "{}"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'parameters' is not one the mp4 muxer writes")));
  EXPECT_THAT(Mp4Writer::open(clip_format(), {{"comment", "a"}, {"comment", "b"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("given twice")));
  EXPECT_THAT(Mp4Writer::open(clip_format(), {{"comment", std::string("a\0b", 3)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NUL")));
  EXPECT_THAT(Mp4Writer::open(clip_format(), {{"comment", "\xff"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mp4 metadata 'comment'")));
}

TEST(Mp4WriterTest, RefusesAFrameOfAnotherDtypeOrShapeAndStaysUsable) {
  auto writer = Mp4Writer::open(clip_format(), {});
  ASSERT_THAT(writer, IsOk());
  Mp4Writer& w = **writer;
  EXPECT_THAT(w.add_frame(clip_frame(0).to(torch::kFloat32)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("but the writer expects uint8 [48, 64, 3] RGB")));
  EXPECT_THAT(w.add_frame(clip_frame(0).transpose(0, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[64, 48, 3]")));
  EXPECT_THAT(w.add_frame(torch::zeros({kClipHeight, kClipWidth, 4}, torch::kUInt8)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[48, 64, 4]")));
  EXPECT_THAT(w.add_frame(torch::zeros({1, kClipHeight, kClipWidth, 3}, torch::kUInt8)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[1, 48, 64, 3]")));
  EXPECT_THAT(w.add_frame(torch::Tensor()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("video frame 0 is undefined")));
  EXPECT_EQ(w.frames(), 0);
  ASSERT_THAT(w.add_frame(clip_frame(0)), IsOk());
  EXPECT_EQ(w.frames(), 1);
  auto bytes = w.finish();
  ASSERT_THAT(bytes, IsOk());
  EXPECT_EQ(read_mp4(*bytes).frames.size(), 1u);
}

TEST(Mp4WriterTest, FinishNeedsAFrameAndSpendsTheWriter) {
  auto none = Mp4Writer::open(clip_format(), {});
  ASSERT_THAT(none, IsOk());
  EXPECT_THAT((*none)->finish(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no frame")));

  auto writer = Mp4Writer::open(clip_format(), {});
  ASSERT_THAT(writer, IsOk());
  ASSERT_THAT((*writer)->add_frame(clip_frame(0)), IsOk());
  ASSERT_THAT((*writer)->finish(), IsOk());
  EXPECT_THAT((*writer)->add_frame(clip_frame(1)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("add_frame after finish()")));
  EXPECT_THAT((*writer)->finish(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("finish after finish()")));
  EXPECT_EQ((*writer)->frames(), 1);
}

TEST(Mp4WriterTest, EncoderLookup) {
  VideoFormat missing = clip_format();
  missing.encoders = {"no_such_h264_encoder"};
  EXPECT_THAT(Mp4Writer::open(missing, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("has no H.264 encoder: looked for no_such_h264_encoder")));

  if (avcodec_find_encoder_by_name("mpeg4") != nullptr) {
    VideoFormat other_codec = clip_format();
    other_codec.encoders = {"mpeg4"};
    EXPECT_THAT(
        Mp4Writer::open(other_codec, {}),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("encoder 'mpeg4' encodes mpeg4, not h264")));
  }

  auto defaults = Mp4Writer::open(clip_format(), {});
  ASSERT_THAT(defaults, IsOk());
  VideoFormat fallback = clip_format();
  fallback.encoders = {"no_such_h264_encoder", (*defaults)->encoder_name()};
  auto writer = Mp4Writer::open(fallback, {});
  ASSERT_THAT(writer, IsOk());
  EXPECT_EQ((*writer)->encoder_name(), (*defaults)->encoder_name());
}

}  // namespace
}  // namespace diffusiond
