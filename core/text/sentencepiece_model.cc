// SentencePieceModel over the module's functions (sentencepiece_library.h):
// the library itself runs in libdiffusiond_sentencepiece.
#include "core/text/sentencepiece_model.h"

#include <cstdint>
#include <utility>

#include "core/text/sentencepiece_library.h"

namespace diffusiond {
namespace {

// sentencepiece_model.proto: ModelProto.normalizer_spec = 3,
// ModelProto.self_test_data = 4, NormalizerSpec.add_dummy_prefix = 3.
constexpr uint32_t kNormalizerSpec = 3;
constexpr uint32_t kSelfTestData = 4;
constexpr uint32_t kAddDummyPrefix = 3;
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

bool read_varint(const std::string& s, size_t* pos, uint64_t* out) {
  *out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= s.size()) return false;
    const uint8_t byte = static_cast<uint8_t>(s[(*pos)++]);
    *out |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

void append_varint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// One field of a message: [start, end) spans tag and value; a
// length-delimited value's bytes start at `payload`.
struct WireField {
  uint32_t number = 0;
  int wire = 0;
  size_t start = 0, payload = 0, end = 0;
};

bool next_field(const std::string& s, size_t* pos, WireField* f) {
  f->start = *pos;
  uint64_t tag = 0, length = 0;
  if (!read_varint(s, pos, &tag)) return false;
  f->number = static_cast<uint32_t>(tag >> 3);
  f->wire = static_cast<int>(tag & 7);
  switch (f->wire) {
    case kVarint:
      if (!read_varint(s, pos, &length)) return false;
      break;
    case kFixed64: *pos += 8; break;
    case kFixed32: *pos += 4; break;
    case kLengthDelimited:
      if (!read_varint(s, pos, &length) || length > s.size() - *pos) return false;
      f->payload = *pos;
      *pos += static_cast<size_t>(length);
      break;
    default: return false;  // groups: not in sentencepiece's protos
  }
  f->end = *pos;
  return *pos <= s.size();
}

// `spec` (a NormalizerSpec's bytes) without add_dummy_prefix, then with it
// false: the last occurrence of a field wins when protobuf parses.
bool normalizer_without_dummy_prefix(const std::string& spec, std::string* out) {
  size_t pos = 0;
  WireField f;
  while (pos < spec.size()) {
    if (!next_field(spec, &pos, &f)) return false;
    if (f.number != kAddDummyPrefix) out->append(spec, f.start, f.end - f.start);
  }
  append_varint(kAddDummyPrefix << 3 | kVarint, out);
  append_varint(0, out);
  return true;
}

}  // namespace

bool without_dummy_prefix(const std::string& serialized, std::string* edited) {
  edited->clear();
  bool had_normalizer = false;
  size_t pos = 0;
  WireField f;
  while (pos < serialized.size()) {
    if (!next_field(serialized, &pos, &f)) return false;
    if (f.number == kSelfTestData) continue;
    if (f.number != kNormalizerSpec || f.wire != kLengthDelimited) {
      edited->append(serialized, f.start, f.end - f.start);
      continue;
    }
    std::string spec;
    if (!normalizer_without_dummy_prefix(serialized.substr(f.payload, f.end - f.payload), &spec)) return false;
    append_varint(kNormalizerSpec << 3 | kLengthDelimited, edited);
    append_varint(spec.size(), edited);
    edited->append(spec);
    had_normalizer = true;
  }
  if (!had_normalizer) {
    std::string spec;
    normalizer_without_dummy_prefix("", &spec);
    append_varint(kNormalizerSpec << 3 | kLengthDelimited, edited);
    append_varint(spec.size(), edited);
    edited->append(spec);
  }
  return true;
}

SentencePieceModel::SentencePieceModel(const SentencePieceLibrary* library, void* processor)
    : library_(library), processor_(processor) {
  // Cached so id_to_piece can answer by reference, as the library does.
  const int n = library_->piece_size(processor_);
  pieces_.resize(static_cast<size_t>(n));
  for (int id = 0; id < n; ++id) library_->id_to_piece(processor_, id, append_to_string, &pieces_[id]);
}

SentencePieceModel::~SentencePieceModel() { library_->free(processor_); }

std::unique_ptr<SentencePieceModel> SentencePieceModel::load(const std::string& serialized,
                                                             bool add_dummy_prefix_off, std::string* error) {
  const SentencePieceLibrary* library = sentencepiece_library(error);
  if (library == nullptr) return nullptr;
  std::string edited;
  if (add_dummy_prefix_off && !without_dummy_prefix(serialized, &edited)) {
    *error = "not a serialized SentencePiece model (malformed protobuf)";
    return nullptr;
  }
  const std::string& bytes = add_dummy_prefix_off ? edited : serialized;
  error->clear();
  void* processor = library->load(bytes.data(), bytes.size(), append_to_string, error);
  if (processor == nullptr) return nullptr;
  if (library->piece_size(processor) < 1) {
    library->free(processor);
    *error = "the model has no pieces";
    return nullptr;
  }
  return std::unique_ptr<SentencePieceModel>(new SentencePieceModel(library, processor));
}

bool SentencePieceModel::encode(const std::string& text, std::vector<std::string>* pieces,
                                std::string* error) const {
  pieces->clear();
  const auto add_piece = [](void* context, const char* data, size_t size) {
    static_cast<std::vector<std::string>*>(context)->emplace_back(data, size);
  };
  error->clear();
  return library_->encode(processor_, text.data(), text.size(), add_piece, pieces, append_to_string, error) != 0;
}

std::string SentencePieceModel::decode(const std::vector<std::string>& pieces) const {
  std::vector<const char*> data;
  std::vector<size_t> sizes;
  for (const std::string& p : pieces) {
    data.push_back(p.data());
    sizes.push_back(p.size());
  }
  std::string text;
  library_->decode(processor_, data.data(), sizes.data(), pieces.size(), append_to_string, &text);
  return text;
}

int SentencePieceModel::size() const { return static_cast<int>(pieces_.size()); }
int SentencePieceModel::piece_to_id(const std::string& piece) const {
  return library_->piece_to_id(processor_, piece.data(), piece.size());
}
const std::string& SentencePieceModel::id_to_piece(int id) const { return pieces_[static_cast<size_t>(id)]; }
bool SentencePieceModel::is_control(int id) const { return library_->is_control(processor_, id) != 0; }
bool SentencePieceModel::is_unknown(int id) const { return library_->is_unknown(processor_, id) != 0; }
bool SentencePieceModel::is_byte(int id) const { return library_->is_byte(processor_, id) != 0; }
int SentencePieceModel::unk_id() const { return library_->unk_id(processor_); }

}  // namespace diffusiond
