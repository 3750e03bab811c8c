// Training a small SentencePiece Unigram model in memory with Debian's
// libsentencepiece, laid out as T5's spiece.model is (<pad> = 0, </s> = 1,
// <unk> = 2, no <s>; the nmt_nfkc normaliser). For the random-weight demo
// models and the tests, where no real tokenizer can be downloaded; the
// daemon itself never trains. Runs in the SentencePiece module
// (sentencepiece_library.h).
//
// Not here: loading and running a model (sentencepiece_model.h).
#ifndef DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_TRAINER_H_
#define DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_TRAINER_H_

#include <string>
#include <vector>

namespace diffusiond {

struct UnigramTrainingOptions {
  // Pieces wanted, the three special ones (and the 256 bytes with
  // byte_fallback) included; a corpus too small for it yields fewer
  // (hard_vocab_limit off). Default 200.
  int vocab_size = 200;
  // Spell characters outside the vocabulary as UTF-8 byte pieces <0xNN>
  // (UMT5's model) instead of <unk> (T5's). Default false.
  bool byte_fallback = false;
};

// Trains on `sentences` with one thread and no sampling, so the same input
// gives the same model. Returns the serialized model (a spiece.model's
// bytes), or false with `*error` set when the library refuses.
bool train_unigram_model(const std::vector<std::string>& sentences, const UnigramTrainingOptions& options,
                         std::string* serialized, std::string* error);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_TRAINER_H_
