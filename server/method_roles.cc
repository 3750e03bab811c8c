#include "server/method_roles.h"

namespace diffusiond {

const std::vector<MethodRule>& method_rules() {
  // Keep in step with docs/api.md#authentication-and-roles.
  static const auto* const rules = new std::vector<MethodRule>{
      // The kubelet's probes carry no credentials.
      {"/grpc.health.v1.Health/Check", true, Role::kRead},
      {"/grpc.health.v1.Health/Watch", true, Role::kRead},
      // Reflection describes the API, which grpcurl needs; no state.
      {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", false, Role::kRead},
      {"/diffusiond.v1.ModelService/ListModels", false, Role::kRead},
      {"/diffusiond.v1.CacheService/GetStats", false, Role::kRead},
      {"/diffusiond.v1.ModelService/ListAvailable", false, Role::kRead},
      {"/diffusiond.v1.CacheService/WatchEvents", false, Role::kRead},
      {"/diffusiond.v1.ModelService/AcquireLease", false, Role::kRun},
      {"/diffusiond.v1.ModelService/RenewLease", false, Role::kRun},
      {"/diffusiond.v1.ModelService/ReleaseLease", false, Role::kRun},
      {"/diffusiond.v1.DenoiseService/Step", false, Role::kRun},
      {"/diffusiond.v1.DenoiseService/Denoise", false, Role::kRun},
      {"/diffusiond.v1.PipelineService/EncodePrompt", false, Role::kRun},
      {"/diffusiond.v1.PipelineService/Decode", false, Role::kRun},
      {"/diffusiond.v1.PipelineService/Generate", false, Role::kRun},
      {"/diffusiond.v1.ModelService/LoadModel", false, Role::kAdmin},
      {"/diffusiond.v1.ModelService/UnloadModel", false, Role::kAdmin},
      {"/diffusiond.v1.CacheService/MakeRoom", false, Role::kAdmin},
  };
  return *rules;
}

std::optional<MethodRule> method_rule(absl::string_view path) {
  for (const MethodRule& r : method_rules()) {
    if (r.path == path) return r;
  }
  return std::nullopt;
}

}  // namespace diffusiond
