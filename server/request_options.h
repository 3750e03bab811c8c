// Reading the API's request options into core's types, with the
// INVALID_ARGUMENT a caller can act on.
#ifndef DIFFUSIOND_SERVER_REQUEST_OPTIONS_H_
#define DIFFUSIOND_SERVER_REQUEST_OPTIONS_H_

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/engine/adapter_request.h"
#include "core/memory/device.h"
#include "core/precision/compute_dtype.h"
#include "core/precision/precision_policy.h"
#include "diffusiond/v1/model_service.pb.h"

namespace diffusiond {

// Empty for FP8_MODE_DEFAULT (the daemon's --fp8).
absl::StatusOr<std::optional<Fp8Options>> fp8_from_wire(int mode);
// Empty for "" (the daemon's --compute_dtype).
absl::StatusOr<std::optional<ComputeDtype>> compute_dtype_from_wire(const std::string& name);
// "" and "cpu" are the CPU; "cuda" the GPU.
absl::StatusOr<Device> device_from_wire(const std::string& name);
// A lease's ttl_seconds as a duration; INVALID_ARGUMENT outside (0, 604800]
// (one week), NaN included, and for a ttl too small to be a duration.
absl::StatusOr<absl::Duration> lease_ttl_from_wire(double ttl_seconds);
// A request's adapters; an unset weight is 1. INVALID_ARGUMENT for more
// than kMaxCallAdapters, before any is looked at (the engine checks each).
absl::StatusOr<std::vector<AdapterRequest>> adapters_from_wire(
    const google::protobuf::RepeatedPtrField<v1::Adapter>& wire);
// Time left before the call's deadline; infinite without one.
absl::Duration time_left(const grpc::CallbackServerContext& context);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_REQUEST_OPTIONS_H_
