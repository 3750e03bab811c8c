// diffusiond.v1.CacheService over the Engine: statistics and MakeRoom, both
// quick enough to answer on gRPC's thread; WatchEvents, a stream fed by the
// engine's event feed (server/watch_events_stream.h).
#ifndef DIFFUSIOND_SERVER_CACHE_SERVICE_H_
#define DIFFUSIOND_SERVER_CACHE_SERVICE_H_

#include "diffusiond/v1/cache_service.grpc.pb.h"
#include "server/service_deps.h"

namespace diffusiond {

class CacheServiceImpl final : public v1::CacheService::CallbackService {
 public:
  explicit CacheServiceImpl(const ServiceDeps& deps) : deps_(deps) {}

  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context, const v1::GetStatsRequest* request,
                                     v1::GetStatsResponse* response) override;
  grpc::ServerUnaryReactor* MakeRoom(grpc::CallbackServerContext* context, const v1::MakeRoomRequest* request,
                                     v1::MakeRoomResponse* response) override;
  grpc::ServerWriteReactor<v1::WatchEvent>* WatchEvents(grpc::CallbackServerContext* context,
                                                        const v1::WatchEventsRequest* request) override;

 private:
  const ServiceDeps deps_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_CACHE_SERVICE_H_
