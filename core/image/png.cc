#include "core/image/png.h"

#include <png.h>

#include <cassert>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/utf8.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// How libpng errors come back. libpng calls on_error, which must not
// return: it records the message here and longjmps to the setjmp of the
// guarded function that made the libpng call. Every member is trivial, and
// the callbacks hold no object with a destructor when they jump, so the jump
// skips nothing that needed destroying.
struct PngState {
  char message[256] = {};
  bool out_of_memory = false;
  std::string* out = nullptr;  // encode: where the bytes go
  const char* in = nullptr;    // decode: the file and how far it was read
  size_t in_size = 0;
  size_t in_offset = 0;
};

PngState* state_of(png_structp png) { return static_cast<PngState*>(png_get_error_ptr(png)); }

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  std::snprintf(state_of(png)->message, sizeof(PngState::message), "%s",
                message != nullptr ? message : "unknown libpng error");
  png_longjmp(png, 1);
}

// Warnings are about inputs libpng repairs (odd keywords, bad ancillary
// CRCs); encode refuses the first kind itself and decode may skip the second.
void on_warning(png_structp, png_const_charp) {}

void on_write(png_structp png, png_bytep data, size_t size) {
  PngState* state = static_cast<PngState*>(png_get_io_ptr(png));
  // An exception must not unwind through libpng's C frames: catch it here
  // and report it the way libpng reports errors, after the handler ends.
  try {
    state->out->append(reinterpret_cast<const char*>(data), size);
  } catch (const std::bad_alloc&) {
    state->out_of_memory = true;
  }
  if (state->out_of_memory) png_error(png, "out of memory");
}

void on_flush(png_structp) {}

void on_read(png_structp png, png_bytep data, size_t size) {
  PngState* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (size > state->in_size - state->in_offset) png_error(png, "the file ends early (truncated)");
  std::memcpy(data, state->in + state->in_offset, size);
  state->in_offset += size;
}

// The guarded functions: each sets libpng's jump target, makes libpng calls,
// and returns false if one of them failed. They hold only trivial locals.
struct EncodeJob {
  png_uint_32 width;
  png_uint_32 height;
  const uint8_t* rgb;
  png_textp text;
  int num_text;
};

bool write_guarded(png_structp png, png_infop info, const EncodeJob& job) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_set_IHDR(png, info, job.width, job.height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (job.num_text > 0) png_set_text(png, info, job.text, job.num_text);
  png_write_info(png, info);
  const size_t row_bytes = static_cast<size_t>(job.width) * 3;
  for (png_uint_32 y = 0; y < job.height; ++y) {
    png_write_row(png, job.rgb + static_cast<size_t>(y) * row_bytes);
  }
  png_write_end(png, info);
  return true;
}

struct DecodeHeader {
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  size_t row_bytes = 0;
  int passes = 1;
};

bool read_info_guarded(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);  // decode_png checks max_pixels
  png_read_info(png, info);
  return true;
}

bool set_rgb8_guarded(png_structp png, png_infop info, DecodeHeader* header) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_expand(png);  // palette to RGB, grey below 8 bits to 8, tRNS to alpha
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  header->passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);  // allocates libpng's row buffers
  header->width = png_get_image_width(png, info);
  header->height = png_get_image_height(png, info);
  header->row_bytes = png_get_rowbytes(png, info);
  return true;
}

// A non-interlaced image grows `rgb` a row at a time, so that a file which
// claims a large size but ends early fails before that size is allocated.
// An interlaced one needs every row from the first pass on.
bool read_image_guarded(png_structp png, png_infop info, const DecodeHeader& header,
                        std::vector<uint8_t>* rgb) {
  if (setjmp(png_jmpbuf(png))) return false;
  if (header.passes == 1) {
    for (png_uint_32 y = 0; y < header.height; ++y) {
      rgb->resize((static_cast<size_t>(y) + 1) * header.row_bytes);
      png_read_row(png, rgb->data() + static_cast<size_t>(y) * header.row_bytes, nullptr);
    }
  } else {
    rgb->resize(static_cast<size_t>(header.height) * header.row_bytes);
    // With interlace handling on, each pass fills in its pixels of every row.
    for (int pass = 0; pass < header.passes; ++pass) {
      for (png_uint_32 y = 0; y < header.height; ++y) {
        png_read_row(png, rgb->data() + static_cast<size_t>(y) * header.row_bytes, nullptr);
      }
    }
  }
  png_read_end(png, info);  // the text chunks after the image data
  return true;
}

absl::Status check_keyword(const std::string& keyword) {
  const std::string quoted = absl::StrCat("PNG text keyword \"", absl::CHexEscape(keyword), "\"");
  if (keyword.empty() || keyword.size() > 79) {
    return absl::InvalidArgumentError(
        absl::StrCat(quoted, " has ", keyword.size(), " bytes; expected 1 to 79"));
  }
  for (size_t i = 0; i < keyword.size(); ++i) {
    const auto c = static_cast<uint8_t>(keyword[i]);
    if (!((c >= 32 && c <= 126) || c >= 161)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s has byte 0x%02x at offset %d; expected Latin-1 printable characters (32-126, "
          "161-255)",
          quoted, c, i));
    }
  }
  if (keyword.front() == ' ' || keyword.back() == ' ' || keyword.find("  ") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(quoted, " has a leading, trailing or doubled space"));
  }
  return absl::OkStatus();
}

// Returns whether `value` goes in an iTXt chunk (it is not all ASCII).
absl::StatusOr<bool> check_value(const std::string& keyword, const std::string& value) {
  const std::string what =
      absl::StrCat("value of PNG text keyword \"", absl::CHexEscape(keyword), "\"");
  if (const size_t nul = value.find('\0'); nul != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has a NUL byte at offset ", nul));
  }
  DIFFUSIOND_RETURN_IF_ERROR(validate_utf8(value, what));
  for (char c : value) {
    if (static_cast<uint8_t>(c) >= 0x80) return true;
  }
  return false;
}

// Checks that every chunk up to IEND lies within the file. libpng allocates
// and zeroes an ancillary chunk's claimed length before reading it, so a
// damaged length would cost up to 2 GiB before the read fails.
absl::Status check_chunk_lengths(absl::string_view bytes) {
  size_t at = 8;  // after the signature
  while (at + 8 <= bytes.size()) {
    uint32_t length = 0;
    for (size_t i = 0; i < 4; ++i) length = (length << 8) | static_cast<uint8_t>(bytes[at + i]);
    const absl::string_view type = bytes.substr(at + 4, 4);
    if (uint64_t{length} + 12 > bytes.size() - at) {
      return absl::DataLossError(absl::StrFormat(
          "corrupt PNG: chunk \"%s\" at offset %d claims %d bytes, but the file ends early "
          "(truncated) %d bytes later",
          absl::CHexEscape(type), at, length, bytes.size() - at - 8));
    }
    if (type == "IEND") break;
    at += 12 + length;
  }
  return absl::OkStatus();  // libpng reports a file cut between chunks
}

std::string latin1_to_utf8(absl::string_view latin1) {
  std::string out;
  out.reserve(latin1.size());
  for (char c : latin1) append_utf8(static_cast<uint8_t>(c), &out);
  return out;
}

class WriteStruct {
 public:
  explicit WriteStruct(PngState* state)
      : png_(png_create_write_struct(PNG_LIBPNG_VER_STRING, state, on_error, on_warning)),
        info_(png_ != nullptr ? png_create_info_struct(png_) : nullptr) {}
  ~WriteStruct() { png_destroy_write_struct(&png_, &info_); }
  WriteStruct(const WriteStruct&) = delete;
  WriteStruct& operator=(const WriteStruct&) = delete;

  png_structp png() const { return png_; }
  png_infop info() const { return info_; }

 private:
  png_structp png_;
  png_infop info_;
};

class ReadStruct {
 public:
  explicit ReadStruct(PngState* state)
      : png_(png_create_read_struct(PNG_LIBPNG_VER_STRING, state, on_error, on_warning)),
        info_(png_ != nullptr ? png_create_info_struct(png_) : nullptr) {}
  ~ReadStruct() { png_destroy_read_struct(&png_, &info_, nullptr); }
  ReadStruct(const ReadStruct&) = delete;
  ReadStruct& operator=(const ReadStruct&) = delete;

  png_structp png() const { return png_; }
  png_infop info() const { return info_; }

 private:
  png_structp png_;
  png_infop info_;
};

}  // namespace

absl::StatusOr<std::string> encode_png(const uint8_t* rgb, int64_t width, int64_t height,
                                       const PngText& text) {
  constexpr int64_t kMaxSide = PNG_UINT_31_MAX;
  if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide ||
      width > std::numeric_limits<int64_t>::max() / 3 / height) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PNG size ", width, "x", height, " is not 1 to 2^31-1 pixels a side within 2^63-1 bytes"));
  }
  std::vector<png_text> chunks(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto& [keyword, value] = text[i];
    DIFFUSIOND_RETURN_IF_ERROR(check_keyword(keyword));
    DIFFUSIOND_ASSIGN_OR_RETURN(const bool international, check_value(keyword, value));
    png_text& chunk = chunks[i];  // value-initialised: no language tags
    // libpng copies the strings and never writes through these pointers.
    chunk.key = const_cast<char*>(keyword.c_str());
    chunk.text = const_cast<char*>(value.c_str());
    if (international) {
      chunk.compression = PNG_ITXT_COMPRESSION_NONE;
      chunk.itxt_length = value.size();
    } else {
      chunk.compression = PNG_TEXT_COMPRESSION_NONE;
      chunk.text_length = value.size();
    }
  }

  std::string out;
  PngState state;
  state.out = &out;
  WriteStruct write(&state);
  if (write.info() == nullptr) return absl::ResourceExhaustedError("out of memory creating a PNG");
  png_set_write_fn(write.png(), &state, on_write, on_flush);
  const EncodeJob job{static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), rgb,
                      chunks.data(), static_cast<int>(chunks.size())};
  if (!write_guarded(write.png(), write.info(), job)) {
    if (state.out_of_memory) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of memory encoding a ", width, "x", height, " PNG after ", out.size(), " bytes"));
    }
    return absl::InternalError(
        absl::StrCat("libpng failed to encode a ", width, "x", height, " PNG: ", state.message));
  }
  return out;
}

absl::StatusOr<DecodedPng> decode_png(absl::string_view bytes, int64_t max_pixels) {
  constexpr size_t kSignatureBytes = 8;
  if (bytes.size() < kSignatureBytes ||
      png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0, kSignatureBytes) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a PNG: ", bytes.size(), " bytes that do not start with the PNG signature"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_chunk_lengths(bytes));
  PngState state;
  state.in = bytes.data();
  state.in_size = bytes.size();
  ReadStruct read(&state);
  if (read.info() == nullptr) return absl::ResourceExhaustedError("out of memory reading a PNG");
  png_set_read_fn(read.png(), &state, on_read);

  if (!read_info_guarded(read.png(), read.info())) {
    return absl::DataLossError(absl::StrCat("corrupt PNG header: ", state.message));
  }
  const int64_t width = png_get_image_width(read.png(), read.info());
  const int64_t height = png_get_image_height(read.png(), read.info());
  if (width * height > max_pixels) {
    return absl::InvalidArgumentError(absl::StrCat("PNG of ", width, "x", height,
                                                   " pixels is larger than the limit of ",
                                                   max_pixels, " pixels"));
  }
  // Deflate packs at most 1032 bytes into one, so the rest of the file bounds
  // the image data: a file that claims more is refused before libpng or this
  // function allocates rows of the claimed size.
  constexpr double kMaxDeflateRatio = 1032;
  const double stored_bytes =
      static_cast<double>(height) * static_cast<double>(png_get_rowbytes(read.png(), read.info()));
  const size_t bytes_left = bytes.size() - state.in_offset;
  if (stored_bytes > static_cast<double>(bytes_left) * kMaxDeflateRatio) {
    return absl::DataLossError(absl::StrCat("corrupt PNG: a ", width, "x", height,
                                            " image cannot fit in the ", bytes_left,
                                            " bytes left after its header"));
  }
  DecodedPng decoded;
  decoded.color_type = png_get_color_type(read.png(), read.info());
  decoded.bit_depth = png_get_bit_depth(read.png(), read.info());
  decoded.has_transparency = png_get_valid(read.png(), read.info(), PNG_INFO_tRNS) != 0;
  DecodeHeader header;
  if (!set_rgb8_guarded(read.png(), read.info(), &header)) {
    return absl::DataLossError(absl::StrCat("corrupt PNG header: ", state.message));
  }
  // The transforms above always end in 8-bit RGB.
  assert(header.row_bytes == static_cast<size_t>(width) * 3);
  decoded.width = width;
  decoded.height = height;
  if (!read_image_guarded(read.png(), read.info(), header, &decoded.rgb)) {
    return absl::DataLossError(
        absl::StrCat("corrupt PNG (", width, "x", height, "): ", state.message));
  }

  png_textp chunks = nullptr;
  int num_chunks = 0;
  png_get_text(read.png(), read.info(), &chunks, &num_chunks);
  for (int i = 0; i < num_chunks; ++i) {
    const png_text& chunk = chunks[i];
    const bool international = chunk.compression == PNG_ITXT_COMPRESSION_NONE ||
                               chunk.compression == PNG_ITXT_COMPRESSION_zTXt;
    const absl::string_view value =
        chunk.text == nullptr
            ? absl::string_view()
            : absl::string_view(chunk.text, international ? chunk.itxt_length : chunk.text_length);
    decoded.text.emplace_back(chunk.key,
                              international ? std::string(value) : latin1_to_utf8(value));
  }
  return decoded;
}

}  // namespace diffusiond
