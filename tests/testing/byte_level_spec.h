// A minimal byte-level BPE TokenizerSpec for tokenizer unit tests: the 256
// byte symbols (id = byte value) plus whatever merges and added tokens a test
// appends (merged tokens get ids from 256 up, in merge order).
#ifndef DIFFUSIOND_TESTS_TESTING_BYTE_LEVEL_SPEC_H_
#define DIFFUSIOND_TESTS_TESTING_BYTE_LEVEL_SPEC_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/text/byte_level.h"
#include "core/text/bpe_tokenizer.h"
#include "core/util/utf8.h"

namespace diffusiond::testing {

// Returns `text`'s bytes spelled in byte symbols ("a b" -> "aĠb").
inline std::string symbols(const std::string& text) { return bytes_to_symbols(text); }

// Returns a spec with the byte symbols and `merges` (each pair given as raw
// text, e.g. {" ", "w"}), each merge's result added to the vocabulary.
inline TokenizerSpec byte_level_spec(const std::vector<std::pair<std::string, std::string>>& merges = {}) {
  TokenizerSpec spec;
  spec.source = "test spec";
  for (int b = 0; b < 256; ++b) {
    std::string symbol;
    append_utf8(byte_to_symbol(static_cast<uint8_t>(b)), &symbol);
    spec.vocab.emplace_back(symbol, b);
  }
  int32_t next = 256;
  for (const auto& [left, right] : merges) {
    spec.merges.emplace_back(symbols(left), symbols(right));
    spec.vocab.emplace_back(symbols(left + right), next++);
  }
  return spec;
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_BYTE_LEVEL_SPEC_H_
