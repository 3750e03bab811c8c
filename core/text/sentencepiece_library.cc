#include "core/text/sentencepiece_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <vector>

namespace diffusiond {
namespace {

// Sanitizer runtimes refuse RTLD_DEEPBIND; the sanitizer builds are
// torch- and gRPC-free, so no second protobuf is there to keep apart.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kDeepBind = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kDeepBind = 0;
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif

constexpr char kModuleName[] = "libdiffusiond_sentencepiece.so";

std::vector<std::string> candidates() {
  std::vector<std::string> paths;
  if (const char* env = getenv("DIFFUSIOND_SENTENCEPIECE_MODULE"); env != nullptr && *env != '\0') {
    paths.push_back(env);
  }
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir.resize(dir.find_last_of('/') + 1);
    paths.push_back(dir + kModuleName);
  }
#ifdef DIFFUSIOND_SENTENCEPIECE_MODULE_PATH
  paths.push_back(DIFFUSIOND_SENTENCEPIECE_MODULE_PATH);
#endif
  return paths;
}

template <typename F>
bool resolve(void* handle, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) error->append(std::string(" (no symbol ") + name + ")");
  return *out != nullptr;
}

const SentencePieceLibrary* load(std::string* error) {
  std::string tried;
  for (const std::string& path : candidates()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried += "\n  " + path + ": " + (why != nullptr ? why : "cannot be loaded");
      continue;
    }
    std::string missing;
    int (*version)(void) = nullptr;
    auto* lib = new SentencePieceLibrary();  // lives for the process, as the module does
    const bool complete =
        resolve(handle, "dspm_interface_version", &version, &missing) && resolve(handle, "dspm_load", &lib->load, &missing) &&
        resolve(handle, "dspm_free", &lib->free, &missing) && resolve(handle, "dspm_encode", &lib->encode, &missing) &&
        resolve(handle, "dspm_decode", &lib->decode, &missing) &&
        resolve(handle, "dspm_piece_size", &lib->piece_size, &missing) &&
        resolve(handle, "dspm_piece_to_id", &lib->piece_to_id, &missing) &&
        resolve(handle, "dspm_id_to_piece", &lib->id_to_piece, &missing) &&
        resolve(handle, "dspm_is_control", &lib->is_control, &missing) &&
        resolve(handle, "dspm_is_unknown", &lib->is_unknown, &missing) &&
        resolve(handle, "dspm_is_byte", &lib->is_byte, &missing) &&
        resolve(handle, "dspm_unk_id", &lib->unk_id, &missing) && resolve(handle, "dspm_train", &lib->train, &missing);
    if (complete && version() == DSPM_INTERFACE_VERSION) return lib;
    delete lib;
    dlclose(handle);
    tried += "\n  " + path + ": " + (complete ? "another interface version" : "incomplete:" + missing);
  }
  *error = "cannot load " + std::string(kModuleName) + ", which runs SentencePiece tokenizers; tried:" + tried;
  return nullptr;
}

}  // namespace

const SentencePieceLibrary* sentencepiece_library(std::string* error) {
  static std::string* const load_error = new std::string();
  static const SentencePieceLibrary* const library = load(load_error);
  if (library == nullptr) *error = *load_error;
  return library;
}

void append_to_string(void* context, const char* data, size_t size) {
  static_cast<std::string*>(context)->append(data, size);
}

}  // namespace diffusiond
