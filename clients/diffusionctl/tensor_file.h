// Wire tensors to and from .safetensors files, without torch: the bytes are
// copied as they are, since both formats store elements little-endian in
// row-major order and differ only in how they spell the dtype.
//
// Not here: the wire contract checks (proto/wire_format.h), which every
// tensor from the daemon passes before it is written.
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_TENSOR_FILE_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_TENSOR_FILE_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/dtype.h"
#include "diffusiond/v1/tensor.pb.h"

namespace diffusiond::ctl {

using NamedTensors = google::protobuf::RepeatedPtrField<v1::NamedTensor>;

// The safetensors dtype of a wire dtype; empty for DTYPE_UNSPECIFIED and
// unknown values.
std::optional<DType> safetensors_dtype(v1::DType dtype);
// The wire dtype of a safetensors dtype; DTYPE_UNSPECIFIED for those the
// wire has none for (F8_E4M3, F8_E5M2, I16, I8).
v1::DType wire_dtype(DType dtype);

// Reads every tensor of the .safetensors file at `path`, in file order.
// NOT_FOUND for a missing file; INVALID_ARGUMENT or DATA_LOSS for a
// malformed one; INVALID_ARGUMENT naming the tensor for a dtype the wire
// cannot carry.
absl::StatusOr<NamedTensors> read_tensor_file(absl::string_view path);

// Reads the one tensor of the file at `path`, or, when it holds several, the
// one called `name`. INVALID_ARGUMENT listing the names when neither fits;
// other errors as read_tensor_file.
absl::StatusOr<v1::Tensor> read_single_tensor(absl::string_view path, absl::string_view name);

// Writes `tensors` to `path` after checking each against the wire contract.
// INVALID_ARGUMENT naming the tensor for a bad or duplicate one (nothing is
// written then); UNAVAILABLE if the file cannot be written, in which case
// the partial file is removed.
absl::Status write_tensor_file(absl::string_view path, const NamedTensors& tensors);

}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_TENSOR_FILE_H_
