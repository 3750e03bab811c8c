#include "clients/diffusionctl/tensor_file.h"

#include <cstdio>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/checkpoint/random_access_file.h"
#include "core/checkpoint/safetensors.h"
#include "core/checkpoint/safetensors_writer.h"
#include "proto/wire_format.h"

namespace diffusiond::ctl {
namespace {

struct DTypePair {
  v1::DType wire;
  DType file;
};

constexpr DTypePair kPairs[] = {
    {v1::DTYPE_FLOAT32, DType::kF32},   {v1::DTYPE_FLOAT16, DType::kF16},
    {v1::DTYPE_BFLOAT16, DType::kBF16}, {v1::DTYPE_FLOAT64, DType::kF64},
    {v1::DTYPE_INT64, DType::kI64},     {v1::DTYPE_INT32, DType::kI32},
    {v1::DTYPE_UINT8, DType::kU8},      {v1::DTYPE_BOOL, DType::kBool},
};
static_assert(sizeof(kPairs) / sizeof(kPairs[0]) == v1::DType_ARRAYSIZE - 1,
              "one safetensors dtype per specified v1::DType");

}  // namespace

std::optional<DType> safetensors_dtype(v1::DType dtype) {
  for (const DTypePair& p : kPairs) {
    if (p.wire == dtype) return p.file;
  }
  return std::nullopt;
}

v1::DType wire_dtype(DType dtype) {
  for (const DTypePair& p : kPairs) {
    if (p.file == dtype) return p.wire;
  }
  return v1::DTYPE_UNSPECIFIED;
}

absl::StatusOr<NamedTensors> read_tensor_file(absl::string_view path) {
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = open_random_access_file(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<SafetensorsHeader> header = read_safetensors_header(**file);
  if (!header.ok()) return header.status();
  NamedTensors tensors;
  for (const TensorRecord& record : header->tensors) {
    const v1::DType dtype = wire_dtype(record.dtype);
    if (dtype == v1::DTYPE_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": tensor \"", record.name, "\" is ", dtype_name(record.dtype),
          ", which the daemon does not accept; convert it to F32, F16, BF16, F64, I64, I32, U8 "
          "or BOOL"));
    }
    v1::NamedTensor* named = tensors.Add();
    named->set_name(record.name);
    v1::Tensor* tensor = named->mutable_tensor();
    tensor->set_dtype(dtype);
    for (int64_t d : record.shape) tensor->add_shape(d);
    std::string* data = tensor->mutable_data();
    data->resize(static_cast<size_t>(record.nbytes));
    if (record.nbytes > 0) {
      if (absl::Status s = (*file)->read_at(record.file_offset, record.nbytes, data->data());
          !s.ok()) {
        return s;
      }
    }
  }
  return tensors;
}

absl::StatusOr<v1::Tensor> read_single_tensor(absl::string_view path, absl::string_view name) {
  absl::StatusOr<NamedTensors> tensors = read_tensor_file(path);
  if (!tensors.ok()) return tensors.status();
  if (tensors->size() == 1) return std::move(*tensors->Mutable(0)->mutable_tensor());
  std::vector<std::string> names;
  for (v1::NamedTensor& t : *tensors) {
    if (t.name() == name) return std::move(*t.mutable_tensor());
    names.push_back(t.name());
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": expected one tensor, or one named \"", name, "\"; the file holds ",
      names.empty() ? "none" : absl::StrCat("\"", absl::StrJoin(names, "\", \""), "\"")));
}

absl::Status write_tensor_file(absl::string_view path, const NamedTensors& tensors) {
  std::vector<TensorSpec> specs;
  std::set<std::string> names;
  for (const v1::NamedTensor& named : tensors) {
    const std::string what = absl::StrCat("tensor \"", named.name(), "\"");
    absl::StatusOr<WireTensorLayout> layout = check_wire_tensor(named.tensor(), what);
    if (!layout.ok()) return layout.status();
    if (named.name().empty() || !names.insert(named.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is unnamed or repeated"));
    }
    specs.push_back(TensorSpec{named.name(),
                               *safetensors_dtype(layout->dtype),
                               {named.tensor().shape().begin(), named.tensor().shape().end()}});
  }
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> writer =
      SafetensorsWriter::create(path, specs);
  if (!writer.ok()) return writer.status();
  absl::Status status;
  for (const v1::NamedTensor& named : tensors) {
    const std::string& data = named.tensor().data();
    status = (*writer)->append(data.data(), static_cast<int64_t>(data.size()));
    if (!status.ok()) break;
  }
  if (status.ok()) status = (*writer)->close();
  if (!status.ok()) std::remove(std::string(path).c_str());
  return status;
}

}  // namespace diffusiond::ctl
