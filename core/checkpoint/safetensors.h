// The safetensors format: parsing and validating a file's header, and the
// tensor records it describes.
//
// Layout: 8-byte little-endian header length N, N bytes of JSON, then the
// data region. The JSON maps tensor names to {"dtype", "shape",
// "data_offsets": [begin, end)} relative to the data region, plus an optional
// "__metadata__" object of strings.
//
// Not here: shards and folders (checkpoint.h), reading tensor data
// (Checkpoint::read).
#ifndef DIFFUSIOND_CORE_CHECKPOINT_SAFETENSORS_H_
#define DIFFUSIOND_CORE_CHECKPOINT_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/dtype.h"
#include "core/checkpoint/random_access_file.h"

namespace diffusiond {

// Headers larger than this are refused (the reference implementation's limit).
inline constexpr int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct TensorRecord {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int64_t nbytes = 0;
  int64_t file_offset = 0;  // absolute offset of the first byte in the file
  int file_index = 0;       // which file of a checkpoint holds it
};

struct SafetensorsHeader {
  std::vector<TensorRecord> tensors;  // in data order (ascending offset)
  std::map<std::string, std::string> metadata;
  int64_t data_begin = 0;  // absolute offset of the data region
};

// Parses and validates a header's JSON. `data_bytes` is the size of the data
// region; `file_name` prefixes every error. Returns INVALID_ARGUMENT for a
// malformed header (bad JSON, duplicate or empty names, unknown dtype, bad
// shape, size overflow, offsets that disagree with the shape, overlapping
// tensors) and DATA_LOSS for offsets past the end of the data.
absl::StatusOr<SafetensorsHeader> parse_safetensors_header(absl::string_view json,
                                                           int64_t data_bytes,
                                                           absl::string_view file_name);

// Reads and validates the header of `file`. Errors as above; DATA_LOSS also
// when the file is shorter than its header length claims.
absl::StatusOr<SafetensorsHeader> read_safetensors_header(const RandomAccessFile& file);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CHECKPOINT_SAFETENSORS_H_
