// GPT-2's byte-level alphabet (`bytes_to_unicode`), which byte-level BPE
// vocabularies such as Qwen's are written in: each of the 256 byte values
// stands for one printable code point, so every byte string is a string of
// vocabulary symbols ("Ġ" is the space byte, "Ċ" the newline byte).
//
// The table: the printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand
// for themselves; the other 68 bytes, in increasing order, stand for
// U+0100, U+0101, ... U+0143.
//
// Not here: BPE itself (core/text/bpe.h).
#ifndef DIFFUSIOND_CORE_TEXT_BYTE_LEVEL_H_
#define DIFFUSIOND_CORE_TEXT_BYTE_LEVEL_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace diffusiond {

// Returns the code point that stands for `byte`.
char32_t byte_to_symbol(uint8_t byte);

// Returns the byte that `symbol` stands for, or -1 if it is not one of the
// 256 symbols.
int symbol_to_byte(char32_t symbol);

// Returns `bytes` spelled in symbols, as UTF-8.
std::string bytes_to_symbols(absl::string_view bytes);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_BYTE_LEVEL_H_
