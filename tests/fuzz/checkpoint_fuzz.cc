// libFuzzer target for everything that parses untrusted checkpoint bytes:
// the safetensors header (length prefix, JSON, tensor table), single-file
// layout detection with scaled-fp8 classification, and shard indexes.
// Bad input must give a Status, never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors.h"

namespace diffusiond {
namespace {

class MemoryFile final : public RandomAccessFile {
 public:
  MemoryFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(reinterpret_cast<const char*>(data), size) {}
  const std::string& path() const override { return path_; }
  int64_t size() const override { return static_cast<int64_t>(data_.size()); }
  absl::Status read_at(int64_t offset, int64_t n, char* dst) const override {
    if (offset < 0 || n < 0 || offset + n > size()) return absl::DataLossError("past the end");
    std::memcpy(dst, data_.data() + offset, static_cast<size_t>(n));
    return absl::OkStatus();
  }

 private:
  const std::string path_;
  const std::string data_;
};

// Checkpoint::open checks the path exists before opening it; this stands
// in for it while the opener serves the fuzz input.
const std::string& placeholder_path() {
  static const std::string* const path = [] {
    auto* p = new std::string(
        (std::filesystem::temp_directory_path() / "diffusiond_fuzz.safetensors").string());
    std::ofstream(*p) << "x";
    return p;
  }();
  return *path;
}

void fuzz_one(const uint8_t* data, size_t size) {
  MemoryFile file("fuzz.safetensors", data, size);
  absl::StatusOr<SafetensorsHeader> header = read_safetensors_header(file);
  if (header.ok()) {
    // Invariants the rest of the loader relies on.
    for (const TensorRecord& t : header->tensors) {
      if (t.file_offset < header->data_begin || t.file_offset + t.nbytes > file.size()) __builtin_trap();
    }
  }

  OpenOptions options;
  options.opener = [data, size](absl::string_view path)
      -> absl::StatusOr<std::unique_ptr<RandomAccessFile>> {
    return std::unique_ptr<RandomAccessFile>(new MemoryFile(std::string(path), data, size));
  };
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(placeholder_path(), options);
  if (ckpt.ok()) {
    for (const TensorRecord& t : (*ckpt)->tensors()) {
      if (t.nbytes <= 64) {
        char buffer[64];
        (void)(*ckpt)->read(t, buffer);
      }
    }
  }

  (void)parse_shard_index(absl::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
}

}  // namespace
}  // namespace diffusiond

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  diffusiond::fuzz_one(data, size);
  return 0;
}
