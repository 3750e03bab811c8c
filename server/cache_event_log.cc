#include "server/cache_event_log.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/log.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kEventNames[] = {"loaded",   "load_failed", "evicted",
                                             "unloaded", "rejected",    "waited_for_room"};
static_assert(sizeof(kEventNames) / sizeof(kEventNames[0]) == 6, "one name per CacheEvent::Kind");
// The VRAM tier's entries are placements: its "load" copies from RAM, and
// its evictions leave the model loaded.
constexpr absl::string_view kVramEventNames[] = {"placed",  "place_failed", "evicted_to_ram",
                                                 "dropped", "rejected",     "waited_for_room"};
static_assert(sizeof(kVramEventNames) / sizeof(kVramEventNames[0]) == 6, "one name per CacheEvent::Kind");

}  // namespace

std::string CacheEventLog::format(const CacheEvent& e, const BudgetSnapshot& after) {
  const bool vram_tier = after.device == Device::kCuda;
  const int kind = static_cast<int>(e.kind);
  std::string line =
      vram_tier ? absl::StrCat("tier=vram event=", kVramEventNames[kind]) : absl::StrCat("event=", kEventNames[kind]);
  if (!e.key.empty()) absl::StrAppend(&line, " model=", logfmt_value(e.key));
  // A placement holds no RAM of its own: its ram_bytes would always be 0.
  if (!vram_tier) absl::StrAppend(&line, " ram_bytes=", e.bytes[kCpuIndex]);
  if (const int64_t vram = e.bytes[kCudaIndex]; vram > 0 || vram_tier) {
    absl::StrAppend(&line, " vram_bytes=", vram);
  }
  const bool waited = e.kind == CacheEvent::Kind::kWaitedForRoom;
  if (e.kind == CacheEvent::Kind::kLoaded || e.kind == CacheEvent::Kind::kLoadFailed || waited) {
    absl::StrAppend(&line, absl::StrFormat(" seconds=%.3f", absl::ToDoubleSeconds(e.duration)));
  }
  // A wait that ended in a refusal comes with its rejected event, which
  // carries the error.
  if (waited) {
    absl::StrAppend(&line, " admitted=", e.status.ok() ? "true" : "false");
  } else if (!e.status.ok()) {
    absl::StrAppend(&line, " code=", absl::StatusCodeToString(e.status.code()),
                    " error=", logfmt_value(e.status.message()));
  }
  absl::StrAppend(&line, " budget_bytes=", after.capacity_bytes, " committed_bytes=",
                  after.committed_bytes, " reserved_bytes=", after.reserved_bytes,
                  " available_bytes=", after.available_bytes());
  return line;
}

void CacheEventLog::on_cache_event(const CacheEvent& event) {
  sink_(format(event, budget_->snapshot()));
}

}  // namespace diffusiond
