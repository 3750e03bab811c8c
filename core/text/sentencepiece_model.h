// SentencePieceModel: a loaded SentencePiece model (spiece.model) — Debian's
// libsentencepiece, run in its own module (sentencepiece_library.h says
// why), behind an interface of standard types.
//
// Here: loading a serialized ModelProto (optionally with the normaliser's
// add_dummy_prefix turned off, as transformers' T5Tokenizer does for
// legacy=False), encoding text to pieces, piece <-> id, piece types and
// decoding pieces, all by the library itself (Unigram Viterbi, the
// normaliser's precompiled charsmap, byte fallback).
//
// Not here: added tokens, special tokens and T5's conventions
// (sentencepiece_tokenizer.h), reading tokenizer folders
// (sentencepiece_files.h), training (sentencepiece_trainer.h).
#ifndef DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_MODEL_H_
#define DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_MODEL_H_

#include <memory>
#include <string>
#include <vector>

namespace diffusiond {

struct SentencePieceLibrary;

// Immutable after load(); encode and decode may run concurrently (the
// library's const methods keep no state).
class SentencePieceModel {
 public:
  // Loads `serialized` (the bytes of a spiece.model). With
  // `add_dummy_prefix_off`, the normaliser spec's add_dummy_prefix is set to
  // false first (and any self-test data, written for the original
  // normaliser, dropped). Returns null and sets `*error` when the bytes are
  // not a model the library accepts.
  static std::unique_ptr<SentencePieceModel> load(const std::string& serialized, bool add_dummy_prefix_off,
                                                  std::string* error);
  ~SentencePieceModel();

  // Returns the pieces of `text` (sentencepiece's encode(text, out_type=str)).
  // Returns false and sets `*error` if the library refuses the text.
  bool encode(const std::string& text, std::vector<std::string>* pieces, std::string* error) const;

  // Returns the text of `pieces` (sentencepiece's decode of pieces): control
  // pieces vanish, byte pieces join into UTF-8, and a piece that is not in
  // the vocabulary passes through as it is spelled.
  std::string decode(const std::vector<std::string>& pieces) const;

  // The number of pieces; ids are [0, size()).
  int size() const;
  // The id of `piece`, or unk_id() for a piece not in the vocabulary.
  int piece_to_id(const std::string& piece) const;
  // REQUIRES: 0 <= id < size().
  const std::string& id_to_piece(int id) const;
  bool is_control(int id) const;
  bool is_unknown(int id) const;
  bool is_byte(int id) const;
  int unk_id() const;

 private:
  SentencePieceModel(const SentencePieceLibrary* library, void* processor);

  const SentencePieceLibrary* const library_;
  void* const processor_;  // owned; freed through library_
  std::vector<std::string> pieces_;  // by id
};

// Returns `serialized` (a ModelProto) with normalizer_spec.add_dummy_prefix
// set to false and self_test_data removed, editing the protobuf wire format
// (no generated protobuf classes ship with the library). Returns false if the
// bytes are not well-formed protobuf.
bool without_dummy_prefix(const std::string& serialized, std::string* edited);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_MODEL_H_
