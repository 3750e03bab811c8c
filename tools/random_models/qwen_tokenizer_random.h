// A byte-level BPE tokenizer in Qwen2's files (tokenizer.json and
// tokenizer_config.json, as Qwen2Tokenizer reads them), for the random
// pipelines whose text encoders are Qwen models (Qwen3, Qwen2.5-VL,
// Qwen3-VL): the 256 byte symbols, merges that make chosen words single
// tokens, and the special tokens after them.
//
// Not here: the tokenizer itself (core/text/), the encoders' weights.
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_TOKENIZER_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_TOKENIZER_RANDOM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace diffusiond {

struct QwenTokenizerFiles {
  // Added tokens, special, numbered after the vocabulary; the first is the
  // padding token, the third the end of sequence.
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"};
  // Pre-tokenized pieces (as Qwen2's split regex cuts text, a leading space
  // included) that become one token each, by merges from left to right.
  // Empty: no merges, every byte a token.
  std::vector<std::string> whole_words;
};

// The Qwen-VL encoders' files for Qwen-Image's prompt template
// (qwen_image_prompt.h): Qwen2.5-VL's chat and vision special tokens, and
// the template's words whole, so that its prefix is the 34 tokens and its
// suffix the 5 that the real tokenizer makes and the pipelines count on.
QwenTokenizerFiles qwen_image_template_tokenizer();

// Writes tokenizer.json and tokenizer_config.json into `folder` (created)
// for a text encoder of `vocab_size` embeddings. Ids: 256 bytes, one per
// merge, then the special tokens. INVALID_ARGUMENT when they need more ids
// than `vocab_size`, UNAVAILABLE if they cannot be written.
absl::Status write_qwen_tokenizer(const std::string& folder, const QwenTokenizerFiles& files, int64_t vocab_size);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_QWEN_TOKENIZER_RANDOM_H_
