// The torch-free part of the wire tensor contract (diffusiond.v1.Tensor):
// element sizes and names of the DType enum, and the validation every
// received tensor passes before any of its bytes is used. The daemon
// (wire_tensor.h) and diffusionctl share it, so both sides check alike.
//
// Not here: conversion to torch::Tensor (wire_tensor.h) or to safetensors
// files (diffusionctl/tensor_file.h).
#ifndef DIFFUSIOND_PROTO_WIRE_FORMAT_H_
#define DIFFUSIOND_PROTO_WIRE_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "diffusiond/v1/tensor.pb.h"

namespace diffusiond {

// The wire's byte order; the conversions copy bytes as they are, so they
// are only right on a host with the same order.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "wire tensors are little-endian and are copied without swapping");

// Bytes per element of `dtype`; 0 for DTYPE_UNSPECIFIED and for numbers the
// enum does not define (proto3 keeps unknown enum values as they came).
int wire_dtype_size(int dtype);

// "float32", "bfloat16", ...; "unspecified" and "unknown dtype 99" otherwise.
std::string wire_dtype_name(int dtype);

// What a valid wire tensor holds.
struct WireTensorLayout {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  int64_t numel = 0;
  int64_t nbytes = 0;
};

// Checks `wire` against the contract: a known dtype, dimensions >= 0, an
// element and byte count that fit in 64 bits, exactly numel × itemsize data
// bytes, and bools stored as 0 or 1. Returns INVALID_ARGUMENT starting with
// `what` (e.g. "input \"x\"") and naming dtype, shape and both byte counts.
absl::StatusOr<WireTensorLayout> check_wire_tensor(const v1::Tensor& wire, absl::string_view what);

// True for float32, float16, bfloat16 and float64.
bool wire_dtype_is_floating(int dtype);

// For a tensor that passed check_wire_tensor: INVALID_ARGUMENT starting with
// `what` and naming the first NaN or infinite element, if a floating one
// holds any. Other dtypes pass. One pass over the bytes, nothing allocated.
absl::Status check_wire_finite(const v1::Tensor& wire, absl::string_view what);

// Named tensors (Step inputs, a conditioning's tensors): every name
// non-empty and given once, every tensor valid as above. INVALID_ARGUMENT
// naming the input by its index or its name (quoted bounded).
absl::Status check_named_wire_tensors(const google::protobuf::RepeatedPtrField<v1::NamedTensor>& wire);

// A conditioning: its tensors as above and no scalar with an empty name;
// the message starts with `what` (e.g. "negative conditioning").
absl::Status check_wire_conditioning(const v1::Conditioning& wire, absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_PROTO_WIRE_FORMAT_H_
