#include "server/request_options.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/precision/compute_dtype.h"
#include "core/util/bounded_text.h"

namespace diffusiond {

absl::StatusOr<std::optional<Fp8Options>> fp8_from_wire(int mode) {
  switch (mode) {
    case v1::FP8_MODE_DEFAULT:
      return std::nullopt;
    case v1::FP8_MODE_OFF:
      return Fp8Options{};
    case v1::FP8_MODE_E4M3FN:
      return Fp8Options{Fp8Format::kE4M3Fn, Fp8Scaling::kNone};
    case v1::FP8_MODE_E5M2:
      return Fp8Options{Fp8Format::kE5M2, Fp8Scaling::kNone};
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown fp8 mode ", mode));
  }
}

absl::StatusOr<std::optional<ComputeDtype>> compute_dtype_from_wire(const std::string& name) {
  if (name.empty()) return std::nullopt;
  std::optional<ComputeDtype> dtype = parse_compute_dtype_name(name);
  if (!dtype.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compute_dtype '", bounded(name), "' is not one of ", compute_dtype_choices()));
  }
  return dtype;
}

absl::StatusOr<Device> device_from_wire(const std::string& name) {
  if (name.empty() || name == "cpu") return Device::kCpu;
  if (name == "cuda") return Device::kCuda;
  return absl::InvalidArgumentError(absl::StrCat("device '", bounded(name), "' is not cpu or cuda"));
}

absl::StatusOr<absl::Duration> lease_ttl_from_wire(double ttl_seconds) {
  // A positive ttl below absl's resolution (1e-300) would be a lease that
  // expired as it was granted.
  if (!(ttl_seconds > 0) || ttl_seconds > 7 * 24 * 3600 || absl::Seconds(ttl_seconds) <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("ttl_seconds must be in (0, 604800], got ", ttl_seconds));
  }
  return absl::Seconds(ttl_seconds);
}

absl::Duration time_left(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteDuration();
  return std::max(absl::ZeroDuration(), absl::FromChrono(deadline - std::chrono::system_clock::now()));
}

absl::StatusOr<std::vector<AdapterRequest>> adapters_from_wire(
    const google::protobuf::RepeatedPtrField<v1::Adapter>& wire) {
  if (static_cast<size_t>(wire.size()) > kMaxCallAdapters) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request names ", wire.size(), " adapters; at most ", kMaxCallAdapters, " are taken"));
  }
  std::vector<AdapterRequest> out;
  for (const v1::Adapter& a : wire) out.push_back({a.path(), a.has_weight() ? a.weight() : 1.0});
  return out;
}

}  // namespace diffusiond
