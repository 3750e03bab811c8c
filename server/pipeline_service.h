// diffusiond.v1.PipelineService over core/pipeline: EncodePrompt, Decode and
// Generate. Requests are checked on gRPC's thread; the work runs on the
// compute queue (--max_concurrent_denoise), components loading on demand.
#ifndef DIFFUSIOND_SERVER_PIPELINE_SERVICE_H_
#define DIFFUSIOND_SERVER_PIPELINE_SERVICE_H_

#include <string>

#include "core/pipeline/generate.h"
#include "diffusiond/v1/pipeline_service.grpc.pb.h"
#include "server/service_deps.h"

namespace diffusiond {

class PipelineServiceImpl final : public v1::PipelineService::CallbackService {
 public:
  // `models_dir` confines pipeline folders (as the engine confines paths).
  PipelineServiceImpl(const ServiceDeps& deps, std::string models_dir)
      : deps_(deps), models_dir_(std::move(models_dir)) {}

  grpc::ServerUnaryReactor* EncodePrompt(grpc::CallbackServerContext* context, const v1::EncodePromptRequest* request,
                                         v1::EncodePromptResponse* response) override;
  grpc::ServerUnaryReactor* Decode(grpc::CallbackServerContext* context, const v1::DecodeRequest* request,
                                   v1::Image* response) override;
  grpc::ServerWriteReactor<v1::GenerateEvent>* Generate(grpc::CallbackServerContext* context,
                                                        const v1::GenerateRequest* request) override;

 private:
  const ServiceDeps deps_;
  const std::string models_dir_;
};

// The API's Generate request as core's, with the API's defaults (1024 x
// 1024, 8 steps). INVALID_ARGUMENT for negative sizes or steps. Exposed for
// tests.
absl::StatusOr<GenerateRequest> generate_request(const v1::GenerateRequest& wire);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_PIPELINE_SERVICE_H_
