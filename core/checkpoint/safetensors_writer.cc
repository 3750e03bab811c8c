#include "core/checkpoint/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"

namespace diffusiond {

absl::StatusOr<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::create(
    absl::string_view path, const std::vector<TensorSpec>& specs,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  int64_t offset = 0;
  for (const TensorSpec& spec : specs) {
    if (spec.name.empty() || spec.name == "__metadata__" || !names.insert(spec.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor name '", spec.name, "' is empty, reserved or repeated"));
    }
    int64_t nbytes = dtype_size(spec.dtype);
    for (int64_t d : spec.shape) nbytes *= d;
    header[spec.name] = {{"dtype", std::string(dtype_name(spec.dtype))},
                         {"shape", spec.shape},
                         {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  const std::string p(path);
  std::FILE* file = std::fopen(p.c_str(), "wb");
  if (file == nullptr) {
    return absl::UnavailableError(absl::StrCat(p, ": ", std::strerror(errno)));
  }
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(uint64_t{text.size()} >> (8 * i));
  if (std::fwrite(prefix, 1, 8, file) != 8 ||
      std::fwrite(text.data(), 1, text.size(), file) != text.size()) {
    std::fclose(file);
    return absl::UnavailableError(absl::StrCat(p, ": write failed"));
  }
  return std::unique_ptr<SafetensorsWriter>(new SafetensorsWriter(p, file, offset));
}

SafetensorsWriter::~SafetensorsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status SafetensorsWriter::append(const void* data, int64_t n) {
  if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": closed"));
  if (written_bytes_ + n > total_bytes_) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": ", written_bytes_ + n, " bytes appended, specs hold ", total_bytes_));
  }
  if (std::fwrite(data, 1, static_cast<size_t>(n), file_) != static_cast<size_t>(n)) {
    return absl::UnavailableError(absl::StrCat(path_, ": write failed"));
  }
  written_bytes_ += n;
  return absl::OkStatus();
}

absl::Status SafetensorsWriter::close() {
  if (file_ == nullptr) return absl::OkStatus();
  std::FILE* f = file_;
  file_ = nullptr;
  const bool ok = std::fclose(f) == 0;
  if (!ok) return absl::UnavailableError(absl::StrCat(path_, ": close failed"));
  if (written_bytes_ != total_bytes_) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": closed after ", written_bytes_, " of ", total_bytes_, " data bytes"));
  }
  return absl::OkStatus();
}

}  // namespace diffusiond
