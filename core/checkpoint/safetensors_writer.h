// SafetensorsWriter: writes a .safetensors file tensor by tensor, for the
// tools and tests that generate checkpoints. The header is written first from
// declared specs, so data streams straight to disk with no full copy in memory.
#ifndef DIFFUSIOND_CORE_CHECKPOINT_SAFETENSORS_WRITER_H_
#define DIFFUSIOND_CORE_CHECKPOINT_SAFETENSORS_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/dtype.h"

namespace diffusiond {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
};

// Not thread-safe. Data must be appended in the order of the specs.
class SafetensorsWriter {
 public:
  // Creates `path` and writes its header. INVALID_ARGUMENT for duplicate or
  // empty names; UNAVAILABLE if the file cannot be written.
  static absl::StatusOr<std::unique_ptr<SafetensorsWriter>> create(
      absl::string_view path, const std::vector<TensorSpec>& specs,
      const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsWriter();

  // Appends `n` bytes of the current tensor's data; a tensor may take several
  // calls. FAILED_PRECONDITION if more bytes are given than the specs hold.
  absl::Status append(const void* data, int64_t n);
  // Flushes and closes. FAILED_PRECONDITION if the data is incomplete.
  absl::Status close();

 private:
  SafetensorsWriter(std::string path, std::FILE* file, int64_t total)
      : path_(std::move(path)), file_(file), total_bytes_(total) {}

  const std::string path_;
  std::FILE* file_;
  const int64_t total_bytes_;
  int64_t written_bytes_ = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CHECKPOINT_SAFETENSORS_WRITER_H_
