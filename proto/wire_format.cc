#include "proto/wire_format.h"

#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/bounded_text.h"

namespace diffusiond {
namespace {

struct WireDTypeInfo {
  const char* name;
  int size;
};

// Indexed by the enum's number.
constexpr WireDTypeInfo kInfo[] = {
    {"unspecified", 0}, {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8},
    {"int64", 8},       {"int32", 4},   {"uint8", 1},   {"bool", 1},
};
static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == v1::DType_ARRAYSIZE, "one entry per v1::DType");

bool known(int dtype) { return dtype >= 0 && dtype < v1::DType_ARRAYSIZE; }

std::string shape_text(const v1::Tensor& wire) {
  return bounded(absl::StrCat("[", absl::StrJoin(wire.shape(), ", "), "]"));
}

// The exponent bits of each floating dtype: all set is an infinity or a
// NaN, whatever the mantissa (IEEE 754; bfloat16 is float32's top half).
template <typename Bits>
int64_t first_non_finite(const std::string& data, Bits exponent_mask) {
  const int64_t n = static_cast<int64_t>(data.size() / sizeof(Bits));
  for (int64_t i = 0; i < n; ++i) {
    Bits bits;
    std::memcpy(&bits, data.data() + i * sizeof(Bits), sizeof(Bits));
    if ((bits & exponent_mask) == exponent_mask) return i;
  }
  return -1;
}

}  // namespace

bool wire_dtype_is_floating(int dtype) {
  return dtype == v1::DTYPE_FLOAT32 || dtype == v1::DTYPE_FLOAT16 || dtype == v1::DTYPE_BFLOAT16 ||
         dtype == v1::DTYPE_FLOAT64;
}

int wire_dtype_size(int dtype) { return known(dtype) ? kInfo[dtype].size : 0; }

std::string wire_dtype_name(int dtype) {
  return known(dtype) ? kInfo[dtype].name : absl::StrCat("unknown dtype ", dtype);
}

absl::StatusOr<WireTensorLayout> check_wire_tensor(const v1::Tensor& wire, absl::string_view what) {
  const int itemsize = wire_dtype_size(wire.dtype());
  if (itemsize == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": dtype is ", wire_dtype_name(wire.dtype()),
        "; expected float32, float16, bfloat16, float64, int64, int32, uint8 or bool"));
  }
  // The count multiplies max(d, 1) so that a shape whose empty dimension
  // comes last, like [2^40, 2^40, 0], is refused too: its row-major strides
  // would overflow just the same.
  int64_t extent = 1;
  bool empty = false;
  for (int64_t d : wire.shape()) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": shape ", shape_text(wire), " has a negative dimension"));
    }
    if (d == 0) empty = true;
    if (__builtin_mul_overflow(extent, d == 0 ? int64_t{1} : d, &extent)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", wire_dtype_name(wire.dtype()),
                                                     " shape ", shape_text(wire),
                                                     " has more elements than fit in 64 bits"));
    }
  }
  WireTensorLayout layout;
  layout.dtype = static_cast<v1::DType>(wire.dtype());
  layout.numel = empty ? 0 : extent;
  if (__builtin_mul_overflow(extent, int64_t{itemsize}, &layout.nbytes)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", wire_dtype_name(wire.dtype()),
                                                   " shape ", shape_text(wire),
                                                   " has more bytes than fit in 64 bits"));
  }
  if (empty) layout.nbytes = 0;
  const int64_t actual = static_cast<int64_t>(wire.data().size());
  if (actual != layout.nbytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", wire_dtype_name(wire.dtype()),
                                                   " shape ", shape_text(wire), " needs ",
                                                   layout.nbytes, " bytes of data, got ", actual));
  }
  if (layout.dtype == v1::DTYPE_BOOL) {
    for (size_t i = 0; i < wire.data().size(); ++i) {
      const unsigned char byte = static_cast<unsigned char>(wire.data()[i]);
      if (byte > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": bool element ", i, " is stored as ", byte, "; expected 0 or 1"));
      }
    }
  }
  return layout;
}

absl::Status check_wire_finite(const v1::Tensor& wire, absl::string_view what) {
  int64_t index = -1;
  switch (wire.dtype()) {
    case v1::DTYPE_FLOAT32: index = first_non_finite<uint32_t>(wire.data(), 0x7f800000u); break;
    case v1::DTYPE_FLOAT64: index = first_non_finite<uint64_t>(wire.data(), 0x7ff0000000000000u); break;
    case v1::DTYPE_FLOAT16: index = first_non_finite<uint16_t>(wire.data(), 0x7c00u); break;
    case v1::DTYPE_BFLOAT16: index = first_non_finite<uint16_t>(wire.data(), 0x7f80u); break;
    default: return absl::OkStatus();
  }
  if (index < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", wire_dtype_name(wire.dtype()), " element ", index,
                                                 " is NaN or infinite; every value must be finite"));
}

absl::Status check_named_wire_tensors(const google::protobuf::RepeatedPtrField<v1::NamedTensor>& wire) {
  std::set<absl::string_view> names;
  for (int i = 0; i < wire.size(); ++i) {
    const v1::NamedTensor& named = wire[i];
    if (named.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has an empty name"));
    }
    const std::string what = absl::StrCat("input \"", bounded(named.name()), "\"");
    if (!names.insert(named.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is given more than once"));
    }
    absl::StatusOr<WireTensorLayout> layout = check_wire_tensor(named.tensor(), what);
    if (!layout.ok()) return layout.status();
  }
  return absl::OkStatus();
}

absl::Status check_wire_conditioning(const v1::Conditioning& wire, absl::string_view what) {
  if (absl::Status s = check_named_wire_tensors(wire.tensors()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  for (const auto& [name, value] : wire.scalars()) {
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": a scalar has an empty name"));
  }
  return absl::OkStatus();
}

}  // namespace diffusiond
