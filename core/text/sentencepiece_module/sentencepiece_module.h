// The C interface of libdiffusiond_sentencepiece, the one shared module
// that links Debian's libsentencepiece.
//
// Why a module: Debian 12's libsentencepiece.so.0 carries its own copy of
// protobuf-lite 3.14 and exports it. In a process that also links
// libprotobuf 3.21 (gRPC: the daemon, diffusionctl, the server tests) the
// two copies interpose at load time and the process aborts before main,
// whichever comes first. So no binary links libsentencepiece: the text
// library loads this module with dlopen(RTLD_LOCAL | RTLD_DEEPBIND)
// (sentencepiece_library.h), which keeps the module's protobuf out of the
// process's symbol scope and binds the module to its own copy.
//
// Plain C types only: the module and its callers share no C++ ABI beyond
// what these declarations say. Byte strings are (pointer, size); results
// that are strings come back through an emit callback, valid only during
// the call.
#ifndef DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_MODULE_SENTENCEPIECE_MODULE_H_
#define DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_MODULE_SENTENCEPIECE_MODULE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Receives one string: a piece, a decoded text, a serialized model or an
// error message.
typedef void (*dspm_emit_fn)(void* context, const char* data, size_t size);

// The interface's version; a caller refuses a module of another.
#define DSPM_INTERFACE_VERSION 1
int dspm_interface_version(void);

// Loads a serialized ModelProto. Returns an opaque processor, or null after
// emitting the library's error.
void* dspm_load(const char* data, size_t size, dspm_emit_fn on_error, void* error_context);
void dspm_free(void* processor);

// Encodes `text` to pieces, emitting each. Returns 1, or 0 after emitting
// the library's error.
int dspm_encode(const void* processor, const char* text, size_t size, dspm_emit_fn on_piece, void* context,
                dspm_emit_fn on_error, void* error_context);

// Decodes `count` pieces, emitting the text once.
void dspm_decode(const void* processor, const char* const* pieces, const size_t* sizes, size_t count,
                 dspm_emit_fn on_text, void* context);

int dspm_piece_size(const void* processor);
int dspm_piece_to_id(const void* processor, const char* piece, size_t size);
// Emits the piece of `id`. REQUIRES: 0 <= id < dspm_piece_size().
void dspm_id_to_piece(const void* processor, int id, dspm_emit_fn on_piece, void* context);
int dspm_is_control(const void* processor, int id);
int dspm_is_unknown(const void* processor, int id);
int dspm_is_byte(const void* processor, int id);
int dspm_unk_id(const void* processor);

// Trains a model from `count` sentences with the trainer's flags as
// key/value pairs. Emits the serialized model and returns 1, or emits the
// error and returns 0.
int dspm_train(const char* const* keys, const char* const* values, size_t flags, const char* const* sentences,
               const size_t* sizes, size_t count, dspm_emit_fn on_model, void* context, dspm_emit_fn on_error,
               void* error_context);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // DIFFUSIOND_CORE_TEXT_SENTENCEPIECE_MODULE_SENTENCEPIECE_MODULE_H_
