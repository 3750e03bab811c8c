// encode_png / decode_png: round trips, text chunks and the chunk type each
// value gets, the refusals, other writers' colour types, and damaged files.
#include "core/image/png.h"

#include <png.h>
#include <zlib.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::vector<uint8_t> pattern(int64_t width, int64_t height, int channels = 3) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width * height * channels));
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 + i / 7);
  return pixels;
}

uint32_t read_be32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// A chunk of type `type` holding `data`, with its CRC.
std::string chunk(const std::string& type, const std::string& data) {
  const std::string body = type + data;
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(body.data()), body.size());
  return be32(static_cast<uint32_t>(data.size())) + body + be32(static_cast<uint32_t>(crc));
}

struct ChunkAt {
  std::string type;
  size_t data_offset;
  size_t length;
};

std::vector<ChunkAt> chunks_of(const std::string& png) {
  std::vector<ChunkAt> chunks;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = read_be32(png, at);
    chunks.push_back({png.substr(at + 4, 4), at + 8, length});
    at += 12 + length;
  }
  return chunks;
}

std::vector<std::string> chunk_types(const std::string& png) {
  std::vector<std::string> types;
  for (const ChunkAt& c : chunks_of(png)) types.push_back(c.type);
  return types;
}

// `png` with `extra` inserted before its IEND chunk (the last 12 bytes).
std::string insert_before_end(const std::string& png, const std::string& extra) {
  return png.substr(0, png.size() - 12) + extra + png.substr(png.size() - 12);
}

// A PNG written by libpng's simplified API in `format` (another writer's
// colour type and depth).
std::string simplified_png(int width, int height, png_uint_32 format, const void* pixels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_get_memory_size(image, size, 0, pixels, 0, nullptr));
  std::string out(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, nullptr));
  out.resize(size);
  return out;
}

TEST(PngTest, RoundTripKeepsSizeAndPixels) {
  for (const auto& [w, h] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 5}, {64, 3}}) {
    const std::vector<uint8_t> rgb = pattern(w, h);
    absl::StatusOr<std::string> png = encode_png(rgb.data(), w, h, {});
    ASSERT_THAT(png, IsOk());
    EXPECT_EQ(png->substr(0, 8), "\x89PNG\r\n\x1a\n");
    absl::StatusOr<DecodedPng> decoded = decode_png(*png);
    ASSERT_THAT(decoded, IsOk());
    EXPECT_EQ(decoded->width, w);
    EXPECT_EQ(decoded->height, h);
    EXPECT_EQ(decoded->rgb, rgb);
    EXPECT_TRUE(decoded->text.empty());
  }
}

TEST(PngTest, TextChunksRoundTripInOrderAsciiAsTextOthersAsInternational) {
  const std::vector<uint8_t> rgb = pattern(4, 4);
  const PngText text = {{"prompt", "a cat\non a mat"},
                        {"negative_prompt", ""},
                        {"seed", "18446744073709551615"},
                        {"prompt", "\xe7\x8c\xab caf\xc3\xa9"},  // UTF-8: 猫 café
                        {std::string(79, 'k'), "long keyword"},
                        {"Caf\xe9 Au Lait", "Latin-1 keyword"}};
  absl::StatusOr<std::string> png = encode_png(rgb.data(), 4, 4, text);
  ASSERT_THAT(png, IsOk());
  EXPECT_THAT(chunk_types(*png),
              ElementsAre("IHDR", "tEXt", "tEXt", "tEXt", "iTXt", "tEXt", "tEXt", "IDAT", "IEND"));
  absl::StatusOr<DecodedPng> decoded = decode_png(*png);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_EQ(decoded->text, text);
}

TEST(PngTest, DecodeConvertsLatin1TextAndReadsTextAfterTheImage) {
  const std::vector<uint8_t> rgb = pattern(2, 2);
  absl::StatusOr<std::string> png = encode_png(rgb.data(), 2, 2, {{"first", "1"}});
  ASSERT_THAT(png, IsOk());
  const std::string latin1 = chunk("tEXt", std::string("Comment\0caf\xe9", 12));
  absl::StatusOr<DecodedPng> decoded = decode_png(insert_before_end(*png, latin1));
  ASSERT_THAT(decoded, IsOk());
  EXPECT_THAT(decoded->text, ElementsAre(Pair("first", "1"), Pair("Comment", "caf\xc3\xa9")));
}

TEST(PngTest, RefusesSizesPngCannotHold) {
  const uint8_t pixel[3] = {};
  const int64_t max_side = (int64_t{1} << 31) - 1;
  for (const auto& [w, h] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 1}, {1, 0}, {-4, 4}, {max_side + 1, 1}, {1, max_side + 1}, {max_side, max_side}}) {
    EXPECT_THAT(encode_png(pixel, w, h, {}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("PNG size ", w, "x", h, " is not"))));
  }
}

TEST(PngTest, RefusesBadKeywordsNamingThem) {
  const uint8_t pixel[3] = {};
  const auto refused = [&](const std::string& keyword, const std::string& why) {
    EXPECT_THAT(encode_png(pixel, 1, 1, {{"fine", "x"}, {keyword, "value"}}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("PNG text keyword"), HasSubstr(why))))
        << keyword;
  };
  refused("", "has 0 bytes; expected 1 to 79");
  refused(std::string(80, 'k'), "has 80 bytes");
  refused(std::string("nul\0inside", 10), "\"nul\\x00inside\" has byte 0x00 at offset 3");
  refused("tab\there", "byte 0x09 at offset 3");
  refused("del\x7f", "byte 0x7f");
  refused("nbsp\xa0", "byte 0xa0");
  refused(" lead", "\" lead\" has a leading, trailing or doubled space");
  refused("trail ", "leading, trailing or doubled space");
  refused("two  spaces", "leading, trailing or doubled space");
}

TEST(PngTest, RefusesValuesWithNulOrBadUtf8) {
  const uint8_t pixel[3] = {};
  EXPECT_THAT(encode_png(pixel, 1, 1, {{"prompt", std::string("a\0b", 3)}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "value of PNG text keyword \"prompt\" has a NUL byte at offset 1"));
  EXPECT_THAT(encode_png(pixel, 1, 1, {{"prompt", "caf\xe9"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("value of PNG text keyword \"prompt\"")));
}

TEST(PngTest, DecodesOtherWritersColourTypesToRgb) {
  const uint8_t grey[] = {0, 128, 255, 7};
  absl::StatusOr<DecodedPng> g = decode_png(simplified_png(2, 2, PNG_FORMAT_GRAY, grey));
  ASSERT_THAT(g, IsOk());
  EXPECT_EQ(g->rgb, std::vector<uint8_t>({0, 0, 0, 128, 128, 128, 255, 255, 255, 7, 7, 7}));
  // The file's own format is reported (padding_mask_crop takes only 8-bit
  // grey and RGB without transparency).
  EXPECT_EQ(g->color_type, kPngColorGrey);
  EXPECT_EQ(g->bit_depth, 8);
  EXPECT_FALSE(g->has_transparency);

  const uint8_t rgba[] = {1, 2, 3, 0, 4, 5, 6, 255};
  absl::StatusOr<DecodedPng> a = decode_png(simplified_png(2, 1, PNG_FORMAT_RGBA, rgba));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(a->rgb, std::vector<uint8_t>({1, 2, 3, 4, 5, 6}));  // alpha dropped, not composited
  EXPECT_EQ(a->color_type, kPngColorRgba);

  const uint16_t grey16[] = {0x1234, 0xff00};
  absl::StatusOr<DecodedPng> g16 = decode_png(simplified_png(1, 2, PNG_FORMAT_LINEAR_Y, grey16));
  ASSERT_THAT(g16, IsOk());
  EXPECT_EQ(g16->rgb, std::vector<uint8_t>({0x12, 0x12, 0x12, 0xff, 0xff, 0xff}));
  EXPECT_EQ(g16->bit_depth, 16);

  const uint8_t pixel[3] = {1, 2, 3};
  absl::StatusOr<std::string> rgb = encode_png(pixel, 1, 1, {});
  ASSERT_THAT(rgb, IsOk());
  absl::StatusOr<DecodedPng> plain = decode_png(*rgb);
  ASSERT_THAT(plain, IsOk());
  EXPECT_EQ(plain->color_type, kPngColorRgb);
  // A tRNS chunk (one transparent colour) before the image data.
  const size_t idat = rgb->find("IDAT") - 4;
  const std::string trns = rgb->substr(0, idat) + chunk("tRNS", std::string("\0\1\0\2\0\3", 6)) + rgb->substr(idat);
  absl::StatusOr<DecodedPng> transparent = decode_png(trns);
  ASSERT_THAT(transparent, IsOk());
  EXPECT_TRUE(transparent->has_transparency);
}

// A 3x3 Adam7-interlaced 8-bit RGB PNG of `rgb`, built by hand: each
// pass's pixels as filter-0 scanlines, all passes in one zlib stream.
std::string interlaced_3x3(const std::vector<uint8_t>& rgb) {
  struct Pass {
    int x0, y0, dx, dy;
  };
  const Pass passes[] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                         {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  std::string raw;
  for (const Pass& p : passes) {
    for (int y = p.y0; y < 3; y += p.dy) {
      if (p.x0 >= 3) continue;  // a pass with no columns has no scanlines
      raw.push_back('\0');
      for (int x = p.x0; x < 3; x += p.dx) {
        raw.append(reinterpret_cast<const char*>(&rgb[(y * 3 + x) * 3]), 3);
      }
    }
  }
  uLongf size = compressBound(raw.size());
  std::string compressed(size, '\0');
  EXPECT_EQ(compress(reinterpret_cast<Bytef*>(compressed.data()), &size,
                     reinterpret_cast<const Bytef*>(raw.data()), raw.size()),
            Z_OK);
  compressed.resize(size);
  const std::string ihdr = be32(3) + be32(3) + std::string("\x08\x02\x00\x00\x01", 5);
  return "\x89PNG\r\n\x1a\n" + chunk("IHDR", ihdr) + chunk("IDAT", compressed) + chunk("IEND", "");
}

TEST(PngTest, DecodesInterlacedAndPaletteImages) {
  const std::vector<uint8_t> rgb = pattern(3, 3);
  absl::StatusOr<DecodedPng> interlaced = decode_png(interlaced_3x3(rgb));
  ASSERT_THAT(interlaced, IsOk());
  EXPECT_EQ(interlaced->rgb, rgb);

  const uint8_t colormap[] = {10, 20, 30, 40, 50, 60};
  const uint8_t indices[] = {1, 0, 0, 1};
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = 2;
  image.height = 2;
  image.format = PNG_FORMAT_RGB_COLORMAP;
  image.colormap_entries = 2;
  std::string png(1024, '\0');
  png_alloc_size_t size = png.size();
  ASSERT_TRUE(png_image_write_to_memory(&image, png.data(), &size, 0, indices, 0, colormap));
  png.resize(size);
  absl::StatusOr<DecodedPng> palette = decode_png(png);
  ASSERT_THAT(palette, IsOk());
  EXPECT_EQ(palette->rgb, std::vector<uint8_t>({40, 50, 60, 10, 20, 30, 10, 20, 30, 40, 50, 60}));
}

TEST(PngTest, DecodeRefusesWhatIsNotAPng) {
  EXPECT_THAT(decode_png(""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "not a PNG: 0 bytes that do not start with the PNG signature"));
  EXPECT_THAT(decode_png(std::string("GIF89a\x01\x00\x01\x00", 10)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a PNG: 10 bytes")));
}

TEST(PngTest, DecodeReportsCorruptAndTruncatedFiles) {
  const std::vector<uint8_t> rgb = pattern(16, 16);
  absl::StatusOr<std::string> png = encode_png(rgb.data(), 16, 16, {{"k", "v"}});
  ASSERT_THAT(png, IsOk());
  const std::vector<ChunkAt> chunks = chunks_of(*png);

  std::string bad_crc = *png;
  bad_crc[chunks[0].data_offset] ^= 0x01;  // IHDR's width, CRC left as it was
  EXPECT_THAT(decode_png(bad_crc), StatusIs(absl::StatusCode::kDataLoss,
                                            HasSubstr("corrupt PNG header: IHDR: CRC error")));

  // Damaged compressed data under a valid CRC: zlib, not the CRC, notices.
  const ChunkAt& idat = chunks[chunks.size() - 2];
  ASSERT_EQ(idat.type, "IDAT");
  std::string data = png->substr(idat.data_offset, idat.length);
  for (size_t i = 2; i < data.size(); i += 3) data[i] = static_cast<char>(~data[i]);
  const std::string damaged = png->substr(0, idat.data_offset - 8) + chunk("IDAT", data) +
                              png->substr(idat.data_offset + idat.length + 4);
  EXPECT_THAT(decode_png(damaged),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("corrupt PNG (16x16)")));

  // A chunk that claims more bytes than the file has is refused before libpng
  // allocates them.
  const std::string long_text =
      png->substr(0, chunks[1].data_offset - 8) + be32(1u << 30) + "tEXt" + std::string("k\0v", 3);
  ASSERT_EQ(chunks[1].type, "tEXt");
  EXPECT_THAT(decode_png(long_text),
              StatusIs(absl::StatusCode::kDataLoss,
                       "corrupt PNG: chunk \"tEXt\" at offset 33 claims 1073741824 bytes, but the "
                       "file ends early (truncated) 3 bytes later"));

  // An IHDR that claims far more pixels than the data could hold.
  const std::string huge =
      "\x89PNG\r\n\x1a\n" +
      chunk("IHDR", be32(16384) + be32(16384) + std::string("\x08\x02\x00\x00\x00", 5)) +
      png->substr(chunks[1].data_offset - 8);
  EXPECT_THAT(decode_png(huge),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("corrupt PNG: a 16384x16384 image cannot fit in the")));

  EXPECT_THAT(decode_png(png->substr(0, 20)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("the file ends early (truncated)")));
  EXPECT_THAT(decode_png(png->substr(0, idat.data_offset + idat.length / 2)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
}

// Every damaged file ends in a Status, never a crash or a leak (the
// sanitizer builds run this), whichever libpng error path it takes.
TEST(PngTest, DecodeSurvivesRandomDamage) {
  const std::vector<uint8_t> rgb = pattern(9, 7);
  absl::StatusOr<std::string> png = encode_png(rgb.data(), 9, 7, {{"prompt", "a cat"}});
  ASSERT_THAT(png, IsOk());
  std::mt19937 random(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string damaged = *png;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) {
      damaged[8 + random() % (damaged.size() - 8)] ^= static_cast<char>(1 + random() % 255);
    }
    if (trial % 2 == 1) {  // recompute every CRC, so the damage reaches the decoder
      std::string fixed = damaged.substr(0, 8);
      for (const ChunkAt& c : chunks_of(damaged)) {
        if (c.data_offset + c.length + 4 > damaged.size()) break;
        fixed += chunk(c.type, damaged.substr(c.data_offset, c.length));
      }
      damaged = fixed;
    }
    if (trial % 5 == 0) damaged.resize(random() % damaged.size());
    absl::StatusOr<DecodedPng> decoded = decode_png(damaged);
    if (decoded.ok()) {
      EXPECT_EQ(decoded->rgb.size(), static_cast<size_t>(decoded->width * decoded->height * 3));
    } else {
      EXPECT_THAT(decoded.status().code(),
                  ::testing::AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument))
          << decoded.status();
    }
  }
}

TEST(PngTest, DecodeRefusesImagesOverThePixelLimit) {
  const std::vector<uint8_t> rgb = pattern(10, 10);
  absl::StatusOr<std::string> png = encode_png(rgb.data(), 10, 10, {});
  ASSERT_THAT(png, IsOk());
  EXPECT_THAT(decode_png(*png, 99),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "PNG of 10x10 pixels is larger than the limit of 99 pixels"));
  EXPECT_THAT(decode_png(*png, 100), IsOk());
}

}  // namespace
}  // namespace diffusiond
