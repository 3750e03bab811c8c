#include "server/cache_service.h"

#include <string>
#include <vector>

#include "core/memory/process_memory.h"
#include "server/grpc_status.h"
#include "server/model_info_wire.h"
#include "server/request_options.h"
#include "server/tier_stats.h"
#include "server/watch_events_stream.h"

namespace diffusiond {
namespace {

// The tier make_room(bytes, device) takes its room from: on cuda with a
// device, the VRAM tier, whose entries are placements (evicting one leaves
// its model loaded in RAM); otherwise the RAM cache.
CacheStats tier_stats(const EngineApi& engine, Device device) {
  if (device == Device::kCuda) {
    if (std::optional<CacheStats> vram = engine.vram_stats(); vram.has_value()) return *std::move(vram);
  }
  return engine.stats();
}

}  // namespace

grpc::ServerUnaryReactor* CacheServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                     const v1::GetStatsRequest*, v1::GetStatsResponse* response) {
  const CacheStats stats = both_tiers_stats(*deps_.engine);
  for (const BudgetSnapshot& b : stats.budgets) {
    v1::DeviceBudget* w = response->add_budgets();
    w->set_device(std::string(device_name(b.device)));
    w->set_capacity_bytes(b.capacity_bytes);
    w->set_reserved_bytes(b.reserved_bytes);
    w->set_committed_bytes(b.committed_bytes);
    w->set_high_water_bytes(b.high_water_bytes);
  }
  for (const ModelInfo& info : deps_.engine->list()) to_wire(info, response->add_models());
  response->set_hits(stats.hits);
  response->set_misses(stats.misses);
  response->set_evictions(stats.evictions);
  response->set_rejections(stats.rejections);
  if (absl::StatusOr<ProcessMemory> m = read_process_memory(); m.ok()) {
    response->set_process_resident_bytes(m->rss_bytes);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* CacheServiceImpl::MakeRoom(grpc::CallbackServerContext* context,
                                                     const v1::MakeRoomRequest* request,
                                                     v1::MakeRoomResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<Device> device = device_from_wire(request->device());
  if (!device.ok()) {
    reactor->Finish(to_grpc_status(device.status()));
    return reactor;
  }
  // The reservation only proves the room exists; it is released at once,
  // leaving the room free for the caller's next load.
  std::vector<std::string> evicted;
  absl::StatusOr<Reservation> room = deps_.engine->make_room(request->bytes(), *device, &evicted);
  if (room.ok()) {
    *room = Reservation();
    for (const std::string& key : evicted) response->add_evicted_model_ids(key);
    const CacheStats after = tier_stats(*deps_.engine, *device);
    for (const BudgetSnapshot& b : after.budgets) {
      if (b.device == *device) response->set_available_bytes(b.available_bytes());
    }
  }
  reactor->Finish(to_grpc_status(room.status()));
  return reactor;
}

grpc::ServerWriteReactor<v1::WatchEvent>* CacheServiceImpl::WatchEvents(grpc::CallbackServerContext*,
                                                                        const v1::WatchEventsRequest* request) {
  auto* stream = new WatchEventsStream(deps_.engine, deps_.metrics, !request->no_progress());
  stream->start(deps_.events);
  return stream;
}

}  // namespace diffusiond
