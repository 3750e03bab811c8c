#include "core/text/byte_level.h"

#include <array>
#include <cstdint>

#include "core/util/utf8.h"

namespace diffusiond {
namespace {

constexpr bool stands_for_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

constexpr std::array<char32_t, 256> make_table() {
  std::array<char32_t, 256> table{};
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) table[b] = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
  return table;
}

constexpr std::array<char32_t, 256> kSymbols = make_table();
constexpr char32_t kFirstRemapped = 0x100;
constexpr int kRemappedCount = 68;

constexpr std::array<uint8_t, kRemappedCount> make_inverse() {
  std::array<uint8_t, kRemappedCount> inverse{};
  for (int b = 0; b < 256; ++b) {
    if (!stands_for_itself(b)) inverse[kSymbols[b] - kFirstRemapped] = static_cast<uint8_t>(b);
  }
  return inverse;
}

constexpr std::array<uint8_t, kRemappedCount> kRemappedBytes = make_inverse();
static_assert(kSymbols[' '] == 0x120, "space is U+0120 (Ġ)");
static_assert(kSymbols['\n'] == 0x10A, "newline is U+010A (Ċ)");
static_assert(kSymbols[0xAD] == kFirstRemapped + kRemappedCount - 1, "the last remapped byte is U+0143");

}  // namespace

char32_t byte_to_symbol(uint8_t byte) { return kSymbols[byte]; }

int symbol_to_byte(char32_t symbol) {
  if (symbol < 0x100) return stands_for_itself(static_cast<int>(symbol)) ? static_cast<int>(symbol) : -1;
  if (symbol < kFirstRemapped + kRemappedCount) return kRemappedBytes[symbol - kFirstRemapped];
  return -1;
}

std::string bytes_to_symbols(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char b : bytes) append_utf8(byte_to_symbol(static_cast<uint8_t>(b)), &out);
  return out;
}

}  // namespace diffusiond
