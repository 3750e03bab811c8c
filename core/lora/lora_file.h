// LoraFile: one LoRA adapter file on disk (safetensors) — its validated
// header, the adapter metadata diffusers writes into it, and reads of its
// tensors as floats — opened once, before any tensor data is read.
//
// Not here: what the keys mean (lora_key.h, lora_plan.h) or the loaded
// adapter (lora_adapter.h).
#ifndef DIFFUSIOND_CORE_LORA_LORA_FILE_H_
#define DIFFUSIOND_CORE_LORA_LORA_FILE_H_

#include <torch/types.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/random_access_file.h"
#include "core/checkpoint/safetensors.h"

namespace diffusiond {

// The header entry diffusers' save_lora_weights writes: a JSON object of
// "<section>.r", "<section>.lora_alpha", ... (loaders/lora_base.py).
inline constexpr char kLoraAdapterMetadataKey[] = "lora_adapter_metadata";

// Immutable after open(); thread-safe reads.
class LoraFile {
 public:
  // Opens `path` through `opener` (default: open_random_access_file) and
  // validates its header as every checkpoint's is (checkpoint/
  // safetensors.h): NOT_FOUND for a missing file, DATA_LOSS for one cut
  // short, INVALID_ARGUMENT for a malformed header or adapter metadata
  // that is not a JSON object, each naming the file.
  static absl::StatusOr<std::unique_ptr<LoraFile>> open(absl::string_view path, const FileOpener& opener = {});

  const std::string& path() const { return file_->path(); }
  // Every tensor, in data order.
  const std::vector<TensorRecord>& tensors() const { return header_.tensors; }
  // The tensor named `key`, or null.
  const TensorRecord* find(absl::string_view key) const;
  // The parsed lora_adapter_metadata object; null when the file has none.
  const nlohmann::json& adapter_metadata() const { return adapter_metadata_; }

  // Reads `t` as a CPU tensor of the float `dtype`. INVALID_ARGUMENT naming
  // the tensor when it is not stored as a float (F64, F32, F16, BF16) or
  // holds a NaN or an infinity; the file's read errors otherwise.
  absl::StatusOr<torch::Tensor> read(const TensorRecord& t, torch::ScalarType dtype) const;

 private:
  LoraFile(std::unique_ptr<RandomAccessFile> file, SafetensorsHeader header, nlohmann::json metadata);

  std::unique_ptr<RandomAccessFile> file_;
  SafetensorsHeader header_;
  std::map<std::string, size_t, std::less<>> index_;  // key -> position in header_.tensors
  nlohmann::json adapter_metadata_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LORA_LORA_FILE_H_
