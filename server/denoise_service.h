// diffusiond.v1.DenoiseService over the Engine. Inputs are validated on
// gRPC's thread (a malformed tensor never waits in the queue); the forward
// and the loop run on the compute queue, whose size is
// --max_concurrent_denoise, with --max_queued_denoise waiting.
#ifndef DIFFUSIOND_SERVER_DENOISE_SERVICE_H_
#define DIFFUSIOND_SERVER_DENOISE_SERVICE_H_

#include "diffusiond/v1/denoise_service.grpc.pb.h"
#include "server/service_deps.h"

namespace diffusiond {

class DenoiseServiceImpl final : public v1::DenoiseService::CallbackService {
 public:
  explicit DenoiseServiceImpl(const ServiceDeps& deps) : deps_(deps) {}

  grpc::ServerUnaryReactor* Step(grpc::CallbackServerContext* context, const v1::StepRequest* request,
                                 v1::StepResponse* response) override;
  grpc::ServerWriteReactor<v1::DenoiseEvent>* Denoise(grpc::CallbackServerContext* context,
                                                      const v1::DenoiseRequest* request) override;

 private:
  const ServiceDeps deps_;
};

// The API's Denoise request as the engine's; INVALID_ARGUMENT for bad
// tensors or options. Exposed for tests.
absl::StatusOr<EngineDenoiseRequest> denoise_request(const v1::DenoiseRequest& wire);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_DENOISE_SERVICE_H_
