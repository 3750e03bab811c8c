// libdiffusiond_sentencepiece: the C interface of sentencepiece_module.h over
// Debian's libsentencepiece. Includes the library's headers, so no Abseil
// header may be included here (the library aliases absl::string_view to
// std::string_view, which clashes with Debian's Abseil).
#include "core/text/sentencepiece_module/sentencepiece_module.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace {

using sentencepiece::SentencePieceProcessor;

const SentencePieceProcessor& processor_of(const void* p) { return *static_cast<const SentencePieceProcessor*>(p); }

void emit_status(const sentencepiece::util::Status& status, dspm_emit_fn on_error, void* context) {
  const std::string message = status.ToString();
  on_error(context, message.data(), message.size());
}

class SentenceList final : public sentencepiece::SentenceIterator {
 public:
  SentenceList(const char* const* sentences, const size_t* sizes, size_t count)
      : sentences_(sentences), sizes_(sizes), count_(count) {
    if (count_ > 0) current_.assign(sentences_[0], sizes_[0]);
  }
  bool done() const override { return index_ >= count_; }
  void Next() override {
    if (++index_ < count_) current_.assign(sentences_[index_], sizes_[index_]);
  }
  const std::string& value() const override { return current_; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

 private:
  const char* const* sentences_;
  const size_t* sizes_;
  size_t count_;
  size_t index_ = 0;
  std::string current_;
};

}  // namespace

extern "C" {

int dspm_interface_version(void) { return DSPM_INTERFACE_VERSION; }

void* dspm_load(const char* data, size_t size, dspm_emit_fn on_error, void* error_context) {
  auto* processor = new SentencePieceProcessor();
  const sentencepiece::util::Status status = processor->LoadFromSerializedProto(std::string(data, size));
  if (!status.ok()) {
    emit_status(status, on_error, error_context);
    delete processor;
    return nullptr;
  }
  return processor;
}

void dspm_free(void* processor) { delete static_cast<SentencePieceProcessor*>(processor); }

int dspm_encode(const void* processor, const char* text, size_t size, dspm_emit_fn on_piece, void* context,
                dspm_emit_fn on_error, void* error_context) {
  std::vector<std::string> pieces;
  const sentencepiece::util::Status status = processor_of(processor).Encode(std::string(text, size), &pieces);
  if (!status.ok()) {
    emit_status(status, on_error, error_context);
    return 0;
  }
  for (const std::string& piece : pieces) on_piece(context, piece.data(), piece.size());
  return 1;
}

void dspm_decode(const void* processor, const char* const* pieces, const size_t* sizes, size_t count,
                 dspm_emit_fn on_text, void* context) {
  std::vector<std::string> list;
  list.reserve(count);
  for (size_t i = 0; i < count; ++i) list.emplace_back(pieces[i], sizes[i]);
  std::string text;
  // The library fails only on an unloaded processor, which dspm_load rules out.
  processor_of(processor).Decode(list, &text).IgnoreError();
  on_text(context, text.data(), text.size());
}

int dspm_piece_size(const void* processor) { return processor_of(processor).GetPieceSize(); }

int dspm_piece_to_id(const void* processor, const char* piece, size_t size) {
  return processor_of(processor).PieceToId(std::string(piece, size));
}

void dspm_id_to_piece(const void* processor, int id, dspm_emit_fn on_piece, void* context) {
  const std::string& piece = processor_of(processor).IdToPiece(id);
  on_piece(context, piece.data(), piece.size());
}

int dspm_is_control(const void* processor, int id) { return processor_of(processor).IsControl(id); }
int dspm_is_unknown(const void* processor, int id) { return processor_of(processor).IsUnknown(id); }
int dspm_is_byte(const void* processor, int id) { return processor_of(processor).IsByte(id); }
int dspm_unk_id(const void* processor) { return processor_of(processor).unk_id(); }

int dspm_train(const char* const* keys, const char* const* values, size_t flags, const char* const* sentences,
               const size_t* sizes, size_t count, dspm_emit_fn on_model, void* context, dspm_emit_fn on_error,
               void* error_context) {
  std::unordered_map<std::string, std::string> args;
  for (size_t i = 0; i < flags; ++i) args[keys[i]] = values[i];
  SentenceList list(sentences, sizes, count);
  std::string serialized;
  const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, &list, &serialized);
  if (!status.ok()) {
    emit_status(status, on_error, error_context);
    return 0;
  }
  on_model(context, serialized.data(), serialized.size());
  return 1;
}

}  // extern "C"
