#include "core/lora/lora_file.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/precision/torch_dtype.h"
#include "core/util/bounded_text.h"
#include "core/util/exception_status.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<std::unique_ptr<LoraFile>> LoraFile::open(absl::string_view path, const FileOpener& opener) {
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                              opener ? opener(path) : open_random_access_file(path));
  DIFFUSIOND_ASSIGN_OR_RETURN(SafetensorsHeader header, read_safetensors_header(*file));
  nlohmann::json metadata;
  if (const auto it = header.metadata.find(kLoraAdapterMetadataKey); it != header.metadata.end()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(
        metadata, parse_json_strict(it->second, absl::StrCat(bounded(path), ": ", kLoraAdapterMetadataKey)));
    if (!metadata.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(bounded(path), ": ", kLoraAdapterMetadataKey, " is not a JSON object: ", bounded(it->second)));
    }
  }
  return std::unique_ptr<LoraFile>(new LoraFile(std::move(file), std::move(header), std::move(metadata)));
}

LoraFile::LoraFile(std::unique_ptr<RandomAccessFile> file, SafetensorsHeader header, nlohmann::json metadata)
    : file_(std::move(file)), header_(std::move(header)), adapter_metadata_(std::move(metadata)) {
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

const TensorRecord* LoraFile::find(absl::string_view key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

absl::StatusOr<torch::Tensor> LoraFile::read(const TensorRecord& t, torch::ScalarType dtype) const {
  if (!is_wide_float(t.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(bounded(path()), ": tensor '", bounded(t.name), "' is ",
                                                   dtype_name(t.dtype), ", expected F32, F16, BF16 or F64"));
  }
  const std::string what = absl::StrCat("reading LoRA tensor '", bounded(t.name), "' of ", bounded(path()));
  return status_of(what, [&]() -> absl::StatusOr<torch::Tensor> {
    torch::Tensor raw = torch::empty(t.shape, torch::TensorOptions().dtype(storage_scalar_type(t.dtype)));
    DIFFUSIOND_RETURN_IF_ERROR(file_->read_at(t.file_offset, t.nbytes, static_cast<char*>(raw.data_ptr())));
    if (!torch::isfinite(raw).all().item<bool>()) {
      return absl::InvalidArgumentError(
          absl::StrCat(bounded(path()), ": tensor '", bounded(t.name), "' holds a NaN or an infinity"));
    }
    torch::Tensor out = raw.to(dtype);
    if (!torch::isfinite(out).all().item<bool>()) {
      return absl::InvalidArgumentError(absl::StrCat(bounded(path()), ": tensor '", bounded(t.name),
                                                     "' overflows the compute dtype ", scalar_type_name(dtype)));
    }
    return out;
  });
}

}  // namespace diffusiond
