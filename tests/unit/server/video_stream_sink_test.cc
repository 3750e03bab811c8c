// VideoStreamSink: a Generate's videos on the call's stream, as PNG frames
// one by one then the Video, or as one MP4 whose metadata carries the
// parameters; an MP4 this process cannot encode is refused by check().
#include "server/video_stream_sink.h"

#include <string>
#include <vector>

#include "core/image/png.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::testing::HasSubstr;

constexpr int64_t kWidth = 32, kHeight = 16;

VideoHeader header(int index) {
  VideoHeader h;
  h.index = index;
  h.seed = 7;
  h.width = kWidth;
  h.height = kHeight;
  h.frames = 3;
  h.fps = 16;
  h.parameters = {{"parameters", R"({"pipeline":"wan","num_frames":3})"}};
  return h;
}

// A frame whose pixels say which it is.
torch::Tensor frame(int k) { return torch::full({kHeight, kWidth, 3}, 40 * k + 10, torch::kUInt8); }

TEST(VideoStreamSink, PngFramesGoOutOneByOneThenTheVideo) {
  std::vector<v1::GenerateEvent> sent;
  VideoStreamSink sink(v1::VIDEO_FORMAT_PNG_FRAMES, [&](v1::GenerateEvent e) { sent.push_back(std::move(e)); });
  ASSERT_THAT(sink.check(kWidth, kHeight, 16), IsOk());
  ASSERT_THAT(sink.begin(header(1)), IsOk());
  for (int k = 0; k < 3; ++k) {
    ASSERT_THAT(sink.add_frame(frame(k)), IsOk());
    ASSERT_EQ(sent.size(), static_cast<size_t>(k + 1)) << "each frame is sent as it comes";
  }
  ASSERT_THAT(sink.finish(), IsOk());
  ASSERT_EQ(sent.size(), 4u);
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(sent[k].has_frame());
    EXPECT_EQ(sent[k].frame().index(), 1);
    EXPECT_EQ(sent[k].frame().frame(), k);
    absl::StatusOr<DecodedPng> png = decode_png(sent[k].frame().png());
    ASSERT_THAT(png, IsOk());
    EXPECT_EQ(png->width, kWidth);
    EXPECT_EQ(png->height, kHeight);
    EXPECT_EQ(png->rgb.at(0), 40 * k + 10);
  }
  ASSERT_TRUE(sent[3].has_video());
  const v1::Video& video = sent[3].video();
  EXPECT_EQ(video.mp4(), "");
  EXPECT_EQ((std::vector<int64_t>{video.width(), video.height(), video.frames(), video.fps(), video.index()}),
            (std::vector<int64_t>{kWidth, kHeight, 3, 16, 1}));
  EXPECT_EQ(video.seed(), 7u);
  EXPECT_EQ(video.parameters(), R"({"pipeline":"wan","num_frames":3})");
  EXPECT_THAT(sink.add_frame(torch::zeros({8, 8, 3}, torch::kUInt8)),
              ::diffusiond::testing::StatusIs(absl::StatusCode::kInternal, HasSubstr("not uint8 [16, 32, 3]")));
}

TEST(VideoStreamSink, AnMp4CarriesTheParametersAsItsComment) {
  std::vector<v1::GenerateEvent> sent;
  VideoStreamSink sink(v1::VIDEO_FORMAT_UNSPECIFIED, [&](v1::GenerateEvent e) { sent.push_back(std::move(e)); });
  const absl::Status usable = sink.check(kWidth, kHeight, 16);
  if (absl::IsFailedPrecondition(usable)) GTEST_SKIP() << "no H.264 encoder here: " << usable;
  ASSERT_THAT(usable, IsOk());
  ASSERT_THAT(sink.begin(header(0)), IsOk());
  for (int k = 0; k < 3; ++k) ASSERT_THAT(sink.add_frame(frame(k)), IsOk());
  EXPECT_TRUE(sent.empty()) << "an MP4 goes out whole, after its last frame";
  ASSERT_THAT(sink.finish(), IsOk());
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_TRUE(sent[0].has_video());
  const std::string& mp4 = sent[0].video().mp4();
  ASSERT_GT(mp4.size(), 8u);
  EXPECT_EQ(mp4.substr(4, 4), "ftyp");
  EXPECT_THAT(mp4, HasSubstr(R"({"pipeline":"wan","num_frames":3})")) << "the comment atom holds the parameters";
  EXPECT_EQ(sent[0].video().frames(), 3);
}

}  // namespace
}  // namespace diffusiond
