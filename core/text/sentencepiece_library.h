// Loading libdiffusiond_sentencepiece, the module that runs Debian's
// libsentencepiece (core/text/sentencepiece_module/ says why it is a module
// loaded apart), and its functions.
//
// Not here: what the functions do (sentencepiece_module.h), the model and
// trainer built on them (sentencepiece_model.h, sentencepiece_trainer.h).
#ifndef DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_LIBRARY_H_
#define DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_LIBRARY_H_

#include <string>

#include "core/text/sentencepiece_module/sentencepiece_module.h"

namespace diffusiond {

// The module's entry points. Valid for the life of the process.
struct SentencePieceLibrary {
  decltype(&dspm_load) load;
  decltype(&dspm_free) free;
  decltype(&dspm_encode) encode;
  decltype(&dspm_decode) decode;
  decltype(&dspm_piece_size) piece_size;
  decltype(&dspm_piece_to_id) piece_to_id;
  decltype(&dspm_id_to_piece) id_to_piece;
  decltype(&dspm_is_control) is_control;
  decltype(&dspm_is_unknown) is_unknown;
  decltype(&dspm_is_byte) is_byte;
  decltype(&dspm_unk_id) unk_id;
  decltype(&dspm_train) train;
};

// Returns the module's functions, loading it on the first call (thread-safe;
// later calls return the same answer). The module is looked for at
// $DIFFUSIOND_SENTENCEPIECE_MODULE, beside the executable, then where the
// build put it. Returns null and sets `*error` (naming every path tried and
// why each failed) when none loads.
const SentencePieceLibrary* sentencepiece_library(std::string* error);

// Appends `data` to the std::string at `context`: the emit callback the
// module's string results come back through.
void append_to_string(void* context, const char* data, size_t size);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_LIBRARY_H_
