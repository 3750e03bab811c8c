#include "core/checkpoint/safetensors.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

absl::Status bad(absl::string_view file, absl::string_view tensor, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(file, ": tensor '", tensor, "': ", problem));
}

// Reads a JSON array of non-negative int64 values.
absl::StatusOr<std::vector<int64_t>> int_array(const json& value, absl::string_view field) {
  if (!value.is_array()) return absl::InvalidArgumentError(absl::StrCat(field, " is not an array"));
  std::vector<int64_t> out;
  for (const json& v : value) {
    if (!v.is_number_unsigned()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " holds ", v.dump(), ", expected non-negative integers"));
    }
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat(field, " value ", u, " is too large"));
    }
    out.push_back(static_cast<int64_t>(u));
  }
  return out;
}

absl::StatusOr<TensorRecord> parse_tensor(const std::string& name, const json& entry,
                                          int64_t data_bytes, absl::string_view file) {
  if (name.empty()) return bad(file, name, "empty tensor name");
  if (!entry.is_object()) return bad(file, name, "entry is not an object");
  for (const auto& [key, unused] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return bad(file, name, absl::StrCat("unexpected field '", key, "'"));
    }
  }
  if (!entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets")) {
    return bad(file, name, "needs dtype, shape and data_offsets");
  }
  TensorRecord t;
  t.name = name;
  const json& dtype = entry.at("dtype");
  std::optional<DType> parsed;
  if (dtype.is_string()) parsed = parse_dtype(dtype.get_ref<const std::string&>());
  if (!parsed.has_value()) {
    return bad(file, name, absl::StrCat("unknown dtype ", dtype.dump()));
  }
  t.dtype = *parsed;
  absl::StatusOr<std::vector<int64_t>> shape = int_array(entry.at("shape"), "shape");
  if (!shape.ok()) return bad(file, name, shape.status().message());
  t.shape = std::move(*shape);
  absl::StatusOr<std::vector<int64_t>> offsets = int_array(entry.at("data_offsets"), "data_offsets");
  if (!offsets.ok()) return bad(file, name, offsets.status().message());
  if (offsets->size() != 2 || (*offsets)[0] > (*offsets)[1]) {
    return bad(file, name, absl::StrCat("data_offsets ", entry.at("data_offsets").dump(),
                                        " is not a [begin, end] pair"));
  }
  int64_t numel = 1;
  for (int64_t d : t.shape) {
    if (__builtin_mul_overflow(numel, d, &numel)) {
      return bad(file, name, absl::StrCat("shape [", absl::StrJoin(t.shape, ", "),
                                          "] overflows 64 bits"));
    }
  }
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, int64_t{dtype_size(t.dtype)}, &nbytes)) {
    return bad(file, name, absl::StrCat("byte size of shape [", absl::StrJoin(t.shape, ", "),
                                        "] overflows 64 bits"));
  }
  t.numel = numel;
  t.nbytes = nbytes;
  const int64_t begin = (*offsets)[0], end = (*offsets)[1];
  if (end - begin != nbytes) {
    return bad(file, name, absl::StrCat("data_offsets [", begin, ", ", end, "] hold ",
                                        end - begin, " bytes, but shape [",
                                        absl::StrJoin(t.shape, ", "), "] of ",
                                        dtype_name(t.dtype), " needs ", nbytes));
  }
  if (end > data_bytes) {
    return absl::DataLossError(absl::StrCat(
        file, ": tensor '", name, "': data_offsets end at ", end,
        " but the data region holds only ", data_bytes, " bytes (truncated file?)"));
  }
  t.file_offset = begin;  // made absolute by the caller
  return t;
}

}  // namespace

absl::StatusOr<SafetensorsHeader> parse_safetensors_header(absl::string_view text,
                                                           int64_t data_bytes,
                                                           absl::string_view file) {
  DIFFUSIOND_ASSIGN_OR_RETURN(json root, parse_json_strict(text, file));
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": header is not a JSON object"));
  }
  SafetensorsHeader header;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(file, ": __metadata__ is not an object"));
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return absl::InvalidArgumentError(absl::StrCat(
              file, ": __metadata__ value for '", key, "' is not a string"));
        }
        header.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(TensorRecord t, parse_tensor(name, entry, data_bytes, file));
    header.tensors.push_back(std::move(t));
  }
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const TensorRecord& a, const TensorRecord& b) {
              return a.file_offset != b.file_offset ? a.file_offset < b.file_offset
                                                    : a.nbytes < b.nbytes;
            });
  for (size_t i = 1; i < header.tensors.size(); ++i) {
    const TensorRecord& prev = header.tensors[i - 1];
    const TensorRecord& cur = header.tensors[i];
    if (cur.nbytes > 0 && prev.file_offset + prev.nbytes > cur.file_offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": tensors '", prev.name, "' [", prev.file_offset, ", ",
          prev.file_offset + prev.nbytes, ") and '", cur.name, "' [", cur.file_offset, ", ",
          cur.file_offset + cur.nbytes, ") overlap"));
    }
  }
  return header;
}

absl::StatusOr<SafetensorsHeader> read_safetensors_header(const RandomAccessFile& file) {
  const std::string& path = file.path();
  if (file.size() < 8) {
    return absl::DataLossError(absl::StrCat(path, ": ", file.size(),
                                            " bytes is too short for a safetensors file"));
  }
  unsigned char prefix[8];
  DIFFUSIOND_RETURN_IF_ERROR(file.read_at(0, 8, reinterpret_cast<char*>(prefix)));
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | prefix[i];
  if (header_bytes > static_cast<uint64_t>(kMaxSafetensorsHeaderBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": header length ", header_bytes,
                                                   " exceeds the limit of ",
                                                   kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (static_cast<int64_t>(header_bytes) > file.size() - 8) {
    return absl::DataLossError(absl::StrCat(path, ": header length ", header_bytes,
                                            " runs past the end of the ", file.size(),
                                            "-byte file"));
  }
  std::string text(header_bytes, '\0');
  DIFFUSIOND_RETURN_IF_ERROR(file.read_at(8, static_cast<int64_t>(header_bytes), text.data()));
  const int64_t data_begin = 8 + static_cast<int64_t>(header_bytes);
  DIFFUSIOND_ASSIGN_OR_RETURN(
      SafetensorsHeader header,
      parse_safetensors_header(text, file.size() - data_begin, path));
  header.data_begin = data_begin;
  for (TensorRecord& t : header.tensors) t.file_offset += data_begin;
  return header;
}

}  // namespace diffusiond
