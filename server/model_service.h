// diffusiond.v1.ModelService over the Engine. Loads and unloads run on work
// queues (both can take seconds); cache hits, listing and leases answer on
// gRPC's thread. ListAvailable walks the models directory (headers only,
// cached) on the unload queue.
#ifndef DIFFUSIOND_SERVER_MODEL_SERVICE_H_
#define DIFFUSIOND_SERVER_MODEL_SERVICE_H_

#include "diffusiond/v1/model_service.grpc.pb.h"
#include "server/service_deps.h"

namespace diffusiond {

class ModelServiceImpl final : public v1::ModelService::CallbackService {
 public:
  explicit ModelServiceImpl(const ServiceDeps& deps) : deps_(deps) {}

  grpc::ServerWriteReactor<v1::LoadModelEvent>* LoadModel(grpc::CallbackServerContext* context,
                                                          const v1::LoadModelRequest* request) override;
  grpc::ServerUnaryReactor* UnloadModel(grpc::CallbackServerContext* context, const v1::UnloadModelRequest* request,
                                        v1::UnloadModelResponse* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context, const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* AcquireLease(grpc::CallbackServerContext* context,
                                         const v1::AcquireLeaseRequest* request,
                                         v1::AcquireLeaseResponse* response) override;
  grpc::ServerUnaryReactor* RenewLease(grpc::CallbackServerContext* context, const v1::RenewLeaseRequest* request,
                                       v1::RenewLeaseResponse* response) override;
  grpc::ServerUnaryReactor* ReleaseLease(grpc::CallbackServerContext* context,
                                         const v1::ReleaseLeaseRequest* request,
                                         v1::ReleaseLeaseResponse* response) override;
  grpc::ServerUnaryReactor* ListAvailable(grpc::CallbackServerContext* context, const v1::ListAvailableRequest* request,
                                          v1::ListAvailableResponse* response) override;

 private:
  const ServiceDeps deps_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_MODEL_SERVICE_H_
