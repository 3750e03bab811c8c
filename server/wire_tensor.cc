#include "server/wire_tensor.h"

#include <cassert>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "proto/wire_format.h"

namespace diffusiond {
namespace {

struct DTypePair {
  v1::DType wire;
  torch::ScalarType torch;
};

constexpr DTypePair kPairs[] = {
    {v1::DTYPE_FLOAT32, torch::kFloat32},   {v1::DTYPE_FLOAT16, torch::kFloat16},
    {v1::DTYPE_BFLOAT16, torch::kBFloat16}, {v1::DTYPE_FLOAT64, torch::kFloat64},
    {v1::DTYPE_INT64, torch::kInt64},       {v1::DTYPE_INT32, torch::kInt32},
    {v1::DTYPE_UINT8, torch::kUInt8},       {v1::DTYPE_BOOL, torch::kBool},
};
static_assert(sizeof(kPairs) / sizeof(kPairs[0]) == v1::DType_ARRAYSIZE - 1,
              "one torch dtype per specified v1::DType");

torch::ScalarType torch_dtype(v1::DType wire) {
  for (const DTypePair& p : kPairs) {
    if (p.wire == wire) return p.torch;
  }
  assert(false && "check_wire_tensor admits only specified dtypes");
  return torch::kFloat32;
}

}  // namespace

absl::StatusOr<torch::Tensor> from_wire(const v1::Tensor& wire, absl::string_view what) {
  absl::StatusOr<WireTensorLayout> layout = check_wire_tensor(wire, what);
  if (!layout.ok()) return layout.status();
  const std::vector<int64_t> shape(wire.shape().begin(), wire.shape().end());
  try {
    torch::Tensor tensor =
        torch::empty(shape, torch::TensorOptions().dtype(torch_dtype(layout->dtype)));
    if (layout->nbytes > 0) {
      std::memcpy(tensor.data_ptr(), wire.data().data(), static_cast<size_t>(layout->nbytes));
    }
    return tensor;
  } catch (const c10::Error& e) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": cannot allocate ", layout->nbytes,
                                                     " bytes: ", e.what_without_backtrace()));
  }
}

absl::Status to_wire(const torch::Tensor& tensor, v1::Tensor* wire) {
  assert(wire != nullptr);
  if (!tensor.defined()) return absl::InvalidArgumentError("cannot send an undefined tensor");
  if (tensor.layout() != torch::kStrided) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot send a ", c10::toString(tensor.layout()), " tensor; only dense ones"));
  }
  const torch::ScalarType type = tensor.scalar_type();
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  for (const DTypePair& p : kPairs) {
    if (p.torch == type) dtype = p.wire;
  }
  if (dtype == v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor of dtype ", c10::toString(type),
                     " has no wire dtype; send float32, float16, bfloat16, float64, int64, int32, "
                     "uint8 or bool"));
  }
  try {
    const torch::Tensor cpu = tensor.to(torch::kCPU).contiguous();
    wire->Clear();
    wire->set_dtype(dtype);
    for (int64_t d : cpu.sizes()) wire->add_shape(d);
    const size_t nbytes = static_cast<size_t>(cpu.numel()) * cpu.element_size();
    if (nbytes > 0) {
      wire->set_data(static_cast<const char*>(cpu.data_ptr()), nbytes);
    }
    return absl::OkStatus();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("copying a ", c10::toString(type),
                                            " tensor to the host: ", e.what_without_backtrace()));
  }
}

namespace {

// Copies named tensors whose names and layouts were checked
// (check_named_wire_tensors), so none is copied before every one passed.
absl::StatusOr<NamedTensors> copy_checked(const google::protobuf::RepeatedPtrField<v1::NamedTensor>& wire) {
  NamedTensors tensors;
  for (const v1::NamedTensor& named : wire) {
    absl::StatusOr<torch::Tensor> tensor =
        from_wire(named.tensor(), absl::StrCat("input \"", bounded(named.name()), "\""));
    if (!tensor.ok()) return tensor.status();
    tensors.emplace(named.name(), std::move(*tensor));
  }
  return tensors;
}

}  // namespace

absl::StatusOr<std::map<std::string, torch::Tensor>> from_wire(
    const google::protobuf::RepeatedPtrField<v1::NamedTensor>& wire) {
  if (absl::Status s = check_named_wire_tensors(wire); !s.ok()) return s;
  return copy_checked(wire);
}

absl::StatusOr<Conditioning> from_wire(const v1::Conditioning& wire, absl::string_view what) {
  if (absl::Status s = check_wire_conditioning(wire, what); !s.ok()) return s;
  Conditioning c;
  absl::StatusOr<NamedTensors> tensors = copy_checked(wire.tensors());
  if (!tensors.ok()) return absl::Status(tensors.status().code(), absl::StrCat(what, ": ", tensors.status().message()));
  c.tensors = *std::move(tensors);
  for (const auto& [name, value] : wire.scalars()) c.scalars[name] = value;
  return c;
}

}  // namespace diffusiond
