// Tensors on the wire (diffusiond.v1.Tensor) to and from torch::Tensor.
// Every incoming tensor is validated before any byte is used: a known
// dtype, non-negative dimensions, no overflow, and exactly
// product(shape) × itemsize bytes.
#ifndef DIFFUSIOND_SERVER_WIRE_TENSOR_H_
#define DIFFUSIOND_SERVER_WIRE_TENSOR_H_

#include <torch/types.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/conditioning.h"
#include "diffusiond/v1/tensor.pb.h"

namespace diffusiond {

// A contiguous CPU tensor holding a copy of `wire`'s data. INVALID_ARGUMENT
// naming `what` (e.g. "input \"x\"") and the problem: unspecified or unknown
// dtype, negative dimension, element count overflow, or a byte count that
// does not match dtype and shape (both numbers in the message).
absl::StatusOr<torch::Tensor> from_wire(const v1::Tensor& wire, absl::string_view what);

// Writes `tensor` (any device, any strides) as a wire tensor. INVALID_ARGUMENT
// for dtypes the wire has no enum for (e.g. FP8).
absl::Status to_wire(const torch::Tensor& tensor, v1::Tensor* wire);

// Named inputs: INVALID_ARGUMENT for an empty or repeated name, or a bad tensor.
absl::StatusOr<std::map<std::string, torch::Tensor>> from_wire(
    const google::protobuf::RepeatedPtrField<v1::NamedTensor>& wire);

// A conditioning: its named tensors as above, and its scalars (names must
// not be empty). Whether they suit the model is the model's to say.
absl::StatusOr<Conditioning> from_wire(const v1::Conditioning& wire, absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_WIRE_TENSOR_H_
