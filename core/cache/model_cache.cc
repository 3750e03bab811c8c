#include "core/cache/model_cache.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/memory/allocator.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using cache_internal::EntryState;

// Returns a Status with its own rep. Copies share a refcounted rep, and
// Debian's libabsl, built without TSan annotations, hides that refcount's
// ordering; a Status handed to other threads is therefore never a copy.
absl::Status unshared_copy(const absl::Status& status) {
  return absl::Status(status.code(), status.message());
}

absl::Status validate_ttl(absl::Duration ttl) {
  if (ttl > absl::ZeroDuration()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("lease ttl must be positive, got ", absl::FormatDuration(ttl)));
}

// How often a caller waiting for room looks at the budget again: a
// reservation given back goes to the budget alone and signals nothing here.
constexpr absl::Duration kRoomRecheck = absl::Milliseconds(10);

absl::Status unknown_lease(LeaseId lease) {
  return absl::NotFoundError(absl::StrCat("lease ", lease, " is unknown or expired"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ModelCache>> ModelCache::create(
    const ModelCacheOptions& options) {
  if (options.ram_budget == nullptr) {
    return absl::InvalidArgumentError("ModelCache needs a RAM budget");
  }
  if (options.ram_budget->device() != Device::kCpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RAM budget is for device '", device_name(options.ram_budget->device()),
        "', expected 'cpu'"));
  }
  if (options.vram_budget != nullptr &&
      options.vram_budget->device() != Device::kCuda) {
    return absl::InvalidArgumentError(absl::StrCat(
        "VRAM budget is for device '", device_name(options.vram_budget->device()),
        "', expected 'cuda'"));
  }
  return std::unique_ptr<ModelCache>(new ModelCache(options));
}

ModelCache::ModelCache(const ModelCacheOptions& options)
    : ram_budget_(options.ram_budget),
      vram_budget_(options.vram_budget),
      clock_(options.clock != nullptr ? options.clock : real_clock()),
      observer_(options.observer),
      trim_heap_after_eviction_(options.trim_heap_after_eviction),
      max_room_wait_(options.max_room_wait) {}

ModelCache::~ModelCache() {
  MutexLock lock(&mu_);
  leases_.clear();
  for (auto& [key, entry] : entries_) {
    assert(entry->pins == entry->leases && "a Pin outlived its ModelCache");
    entry->state = EntryState::kRemoved;
    entry->value.reset();  // memory first, then the accounting
    for (Charge& c : entry->charges) c.release();
  }
  entries_.clear();
}

Budget* ModelCache::budget_for(Device device) const {
  return device == Device::kCpu ? ram_budget_ : vram_budget_;
}

ModelCache::RoomFigures ModelCache::room_figures_locked(const Budget& budget, Device device, const Entry* kept) const {
  RoomFigures f;
  f.snapshot = budget.snapshot();
  for (const auto& [key, entry] : entries_) {
    const int64_t held = entry->bytes(device);
    if (held == 0) continue;
    if (entry.get() == kept) {
      // Never evicted for the work it is kept for, and never freed by it.
      f.pinned += held;
      ++f.pinned_entries;
      f.kept = held;
    } else if (entry->state == EntryState::kReady && entry->pins == 0) {
      f.candidates.push_back(entry);
      f.evictable += held;
    } else {
      f.pinned += held;
      ++f.pinned_entries;
      if (entry->pins > 0 && entry->pins == entry->leases) f.leased += held;
    }
  }
  return f;
}

absl::StatusOr<Reservation> ModelCache::admit_locked(Budget& budget, int64_t bytes, Device device,
                                                     const absl::string_view* keep, RoomFigures& room,
                                                     std::vector<std::string>* evicted,
                                                     std::vector<CacheEvent>* events) {
  std::sort(room.candidates.begin(), room.candidates.end(),
            [](const std::shared_ptr<Entry>& a, const std::shared_ptr<Entry>& b) {
              return a->last_use_tick < b->last_use_tick;
            });
  for (const std::shared_ptr<Entry>& victim : room.candidates) {
    if (budget.available_bytes() >= bytes) break;
    events->push_back(remove_locked(victim, CacheEvent::Kind::kEvicted));
    events->back().device = device;
    events->back().reason =
        absl::StrCat("least recently used; made room for ", format_bytes(bytes), " on ", device_name(device),
                     keep != nullptr ? absl::StrCat(" beside \"", bounded(*keep), "\"") : std::string());
    if (evicted != nullptr) evicted->push_back(events->back().key);
    ++counters_.evictions;
  }
  absl::StatusOr<Reservation> reserved = budget.reserve(bytes);
  if (!reserved.ok()) ++counters_.rejections;
  return reserved;
}

absl::StatusOr<Reservation> ModelCache::make_room(int64_t bytes, Device device, std::vector<std::string>* evicted,
                                                  const RoomWait& wait) {
  return make_room_for(nullptr, bytes, device, evicted, wait, nullptr);
}

absl::StatusOr<PinnedRoom> ModelCache::make_room_beside(absl::string_view key, int64_t bytes, Device device,
                                                        std::vector<std::string>* evicted, const RoomWait& wait) {
  PinnedRoom out;
  DIFFUSIOND_ASSIGN_OR_RETURN(out.reservation, make_room_for(&key, bytes, device, evicted, wait, &out.pin));
  return out;
}

absl::StatusOr<Reservation> ModelCache::make_room_for(const absl::string_view* keep, int64_t bytes, Device device,
                                                      std::vector<std::string>* evicted, const RoomWait& wait,
                                                      Pin* pinned) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("make_room: negative size ", bytes));
  }
  Budget* const budget = budget_for(device);
  if (budget == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("no ", device_name(device), " budget is configured"));
  }
  std::vector<CacheEvent> events;
  absl::StatusOr<Reservation> result;
  {
    MutexLock lock(&mu_);
    const absl::Time start = clock_->now();
    const absl::Time deadline = wait.wait ? start + max_room_wait_ : start;
    std::optional<uint64_t> ticket;
    for (;;) {
      expire_leases_locked();
      std::shared_ptr<Entry> kept;
      if (keep != nullptr) {
        absl::StatusOr<std::shared_ptr<Entry>> entry = ready_entry_locked(*keep);
        if (!entry.ok()) {
          result = ticket.has_value() ? absl::NotFoundError(absl::StrCat("model '", bounded(*keep),
                                                                         "' left the cache while this waited for room"))
                                      : entry.status();
          break;
        }
        kept = *std::move(entry);
      }
      RoomFigures room = room_figures_locked(*budget, device, kept.get());
      // A caller that does not wait tries now, as before there was a line.
      const bool at_front = !wait.wait || (ticket.has_value() ? room_line_.front() == *ticket : room_line_.empty());
      if (at_front && bytes <= room.snapshot.available_bytes() + room.evictable) {
        result = admit_locked(*budget, bytes, device, keep, room, evicted, &events);
        if (result.ok() && kept != nullptr) *pinned = pin_locked(kept);
        break;
      }
      const absl::Time now = clock_->now();
      const bool never_fits = bytes > room.snapshot.capacity_bytes - room.leased - room.kept;
      if (never_fits || now >= deadline || wait.cancel.cancelled()) {
        ++counters_.rejections;
        std::string waited;
        if (ticket.has_value()) {
          waited = wait.cancel.cancelled()
                       ? absl::StrCat(" (stopped waiting after ", absl::FormatDuration(now - start), ": ",
                                      wait.cancel.status().message(), ")")
                       : absl::StrCat(" (after waiting ", absl::FormatDuration(now - start), " for work in flight)");
        } else if (never_fits && room.leased > 0) {
          waited = absl::StrCat(" (leases hold ", format_bytes(room.leased), ", which no call's end frees)");
        } else if (never_fits && room.kept > 0) {
          waited = absl::StrCat(" (beside the model it is for, which holds ", format_bytes(room.kept), ")");
        }
        result = absl::ResourceExhaustedError(absl::StrCat(
            "cannot make room on ", device_name(device), ": needed ", format_bytes(bytes), ", available ",
            format_bytes(room.snapshot.available_bytes()), ", evictable ", format_bytes(room.evictable), " (budget ",
            format_bytes(room.snapshot.capacity_bytes), ", committed ", format_bytes(room.snapshot.committed_bytes),
            ", reserved by work in flight ", format_bytes(room.snapshot.reserved_bytes), ", ", room.pinned_entries,
            " pinned or busy entries hold ", format_bytes(room.pinned), ")", waited));
        CacheEvent rejected;
        rejected.kind = CacheEvent::Kind::kRejected;
        rejected.device = device;
        rejected.bytes[static_cast<int>(device)] = bytes;
        rejected.status = result.status();
        events.push_back(std::move(rejected));
        break;
      }
      if (!ticket.has_value()) {
        ticket = next_room_ticket_++;
        room_line_.push_back(*ticket);
        ++counters_.room_waits;
      }
      // Unpins signal changed_; a reservation given back goes to the budget
      // alone, so the line also looks again every few milliseconds.
      clock_->wait_until(&changed_, &mu_, std::min(deadline, clock_->now() + kRoomRecheck));
    }
    if (ticket.has_value()) {
      room_line_.erase(std::find(room_line_.begin(), room_line_.end(), *ticket));
      changed_.signal_all();  // the next in line may go
      CacheEvent waited;
      waited.kind = CacheEvent::Kind::kWaitedForRoom;
      waited.device = device;
      waited.bytes[static_cast<int>(device)] = bytes;
      waited.duration = clock_->now() - start;
      waited.status = result.status();
      events.push_back(std::move(waited));
    }
  }
  publish(events);
  return result;
}

absl::StatusOr<Pin> ModelCache::get(absl::string_view key) {
  MutexLock lock(&mu_);
  expire_leases_locked();
  absl::StatusOr<std::shared_ptr<Entry>> entry = ready_entry_locked(key);
  if (!entry.ok()) return entry.status();
  ++counters_.hits;
  return pin_locked(*entry);
}

bool ModelCache::peek(absl::string_view key, const std::function<void(const CacheValue&)>& read) const {
  MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second->value == nullptr ||
      (it->second->state != EntryState::kReady && it->second->state != EntryState::kDraining)) {
    return false;
  }
  read(*it->second->value);
  return true;
}

absl::StatusOr<std::shared_ptr<cache_internal::Entry>> ModelCache::ready_entry_locked(
    absl::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second->state != EntryState::kReady) {
    return absl::NotFoundError(absl::StrCat("model '", key, "' is not loaded"));
  }
  return it->second;
}

void ModelCache::touch_locked(Entry& entry) {
  entry.last_use_tick = ++tick_;
  entry.last_use_time = clock_->now();
}

absl::StatusOr<Claim> ModelCache::claim(absl::string_view key) {
  MutexLock lock(&mu_);
  expire_leases_locked();
  for (;;) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      ++counters_.misses;
      auto entry = std::make_shared<Entry>(std::string(key));
      entries_.emplace(entry->key, entry);
      return Claim(LoadSlot(this, std::move(entry), clock_->now()));
    }
    std::shared_ptr<Entry> found = it->second;
    if (found->state == EntryState::kReady) {
      ++counters_.hits;
      return Claim(pin_locked(found));
    }
    if (found->state == EntryState::kDraining) {
      // Waiting here could deadlock: the unload waits for pins that this
      // caller (or its lease) may hold. Refuse; the client can retry.
      return absl::AbortedError(
          absl::StrCat("model '", key, "' is being unloaded; retry once the unload is done"));
    }
    // Loading: share its result (the loop looks again once it is ready).
    while (found->state == EntryState::kLoading) changed_.wait(&mu_);
    // A failed load answers all its waiters; a load that succeeded and was
    // evicted before this thread woke is simply looked up again.
    if (found->state == EntryState::kRemoved && !found->load_status.ok()) {
      return unshared_copy(found->load_status);
    }
  }
}

absl::StatusOr<Pin> ModelCache::get_or_load(absl::string_view key, const Loader& loader) {
  DIFFUSIOND_ASSIGN_OR_RETURN(Claim claimed, claim(key));
  if (Pin* pin = std::get_if<Pin>(&claimed)) return std::move(*pin);
  // No exception may cross into the cache: a throwing loader must still
  // leave its entry removed and its reservation released.
  return std::get<LoadSlot>(claimed).finish(status_of(absl::StrCat("the loader for '", key, "'"), loader));
}

absl::StatusOr<Pin> ModelCache::finish_load(const std::shared_ptr<Entry>& entry,
                                            absl::StatusOr<LoadedValue> loaded,
                                            absl::Duration took,
                                            std::vector<CacheEvent>* events) {
  if (loaded.ok() && loaded->value == nullptr) {
    loaded = absl::InternalError(
        absl::StrCat("loader for '", entry->key, "' returned no value"));
  }
  CacheEvent event;
  event.key = entry->key;
  event.duration = took;
  changed_.signal_all();
  if (!loaded.ok()) {
    ++counters_.failed_loads;
    entries_.erase(entry->key);
    entry->state = EntryState::kRemoved;
    entry->load_status = unshared_copy(loaded.status());
    event.kind = CacheEvent::Kind::kLoadFailed;
    event.status = loaded.status();
    events->push_back(std::move(event));
    return loaded.status();
  }
  for (Reservation& r : loaded->reservations) {
    assert(!r.holds_bytes() || budget_for(r.device()) != nullptr);
    entry->charges[static_cast<int>(r.device())].merge(std::move(r).commit());
  }
  entry->value = std::move(loaded->value);
  entry->state = EntryState::kReady;
  entry->ready_time = clock_->now();
  event.kind = CacheEvent::Kind::kLoaded;
  for (Device d : all_devices()) event.bytes[static_cast<int>(d)] = entry->bytes(d);
  events->push_back(std::move(event));
  return pin_locked(entry);
}

Pin ModelCache::pin_locked(const std::shared_ptr<Entry>& entry) {
  ++entry->pins;
  touch_locked(*entry);
  return Pin(this, entry);
}

void ModelCache::unpin(Entry& entry) {
  MutexLock lock(&mu_);
  assert(entry.pins > 0);
  --entry.pins;
  touch_locked(entry);
  if (entry.pins == 0) changed_.signal_all();
}

CacheEvent ModelCache::remove_locked(const std::shared_ptr<Entry>& entry,
                                     CacheEvent::Kind kind) {
  assert(entry->pins == 0);
  CacheEvent event;
  event.kind = kind;
  event.key = entry->key;
  for (Device d : all_devices()) event.bytes[static_cast<int>(d)] = entry->bytes(d);
  entries_.erase(entry->key);
  entry->state = EntryState::kRemoved;
  // The memory goes before the accounting, so no other load is admitted
  // against bytes that are still resident.
  entry->value.reset();
  for (Charge& c : entry->charges) c.release();
  changed_.signal_all();
  return event;
}

absl::StatusOr<UnloadResult> ModelCache::unload(absl::string_view key,
                                                const UnloadOptions& options) {
  std::vector<CacheEvent> events;
  absl::StatusOr<UnloadResult> result;
  // Wakes the waits below when the caller gives up. Made outside mu_, which
  // the callback takes (so the wake cannot fall between a check and a wait).
  const CancellationCallback wake = options.cancel.on_cancel([this] {
    MutexLock lock(&mu_);
    changed_.signal_all();
  });
  {
    MutexLock lock(&mu_);
    expire_leases_locked();
    const absl::Time deadline = clock_->now() + options.timeout;
    auto it = entries_.find(key);
    std::shared_ptr<Entry> entry = it == entries_.end() ? nullptr : it->second;
    while (entry != nullptr && entry->state == EntryState::kLoading && options.wait && !options.cancel.cancelled() &&
           !clock_->wait_until(&changed_, &mu_, deadline)) {
    }
    if (options.wait && options.cancel.cancelled()) {
      const absl::Status why = options.cancel.status();
      result = absl::Status(why.code(), absl::StrCat("the unload of model '", key, "' was cancelled (", why.message(),
                                                     "); it stays loaded"));
    } else if (entry == nullptr || entry->state == EntryState::kRemoved) {
      result = absl::NotFoundError(absl::StrCat("model '", key, "' is not loaded"));
    } else if (entry->state == EntryState::kLoading) {
      result = options.wait ? absl::DeadlineExceededError(absl::StrCat(
                                  "model '", key, "' is still loading"))
                            : absl::FailedPreconditionError(absl::StrCat(
                                  "model '", key, "' is still loading"));
    } else if (entry->state == EntryState::kDraining) {
      result = absl::FailedPreconditionError(
          absl::StrCat("model '", key, "' is already being unloaded"));
    } else if (entry->pins > 0 && !options.wait) {
      result = absl::FailedPreconditionError(
          absl::StrCat("model '", key, "' is in use: ", entry->pins, " pins, of which ",
                       entry->leases, " are leases"));
    } else {
      entry->state = EntryState::kDraining;
      await_unpinned_locked(*entry, deadline, options.cancel);
      if (entry->pins > 0) {
        entry->state = EntryState::kReady;
        changed_.signal_all();
        const absl::Status why = options.cancel.status();
        result = !why.ok() ? absl::Status(why.code(), absl::StrCat("the unload of model '", key, "' was cancelled (",
                                                                   why.message(), "); it stays loaded"))
                           : absl::DeadlineExceededError(absl::StrCat("model '", key, "' still has ", entry->pins,
                                                                      " pins after waiting ",
                                                                      absl::FormatDuration(options.timeout)));
      } else {
        CacheEvent event = remove_locked(entry, CacheEvent::Kind::kUnloaded);
        ++counters_.unloads;
        UnloadResult freed;
        freed.freed_bytes = event.bytes;
        events.push_back(std::move(event));
        result = freed;
      }
    }
  }
  publish(events);
  return result;
}

absl::StatusOr<LeaseId> ModelCache::acquire_lease(absl::string_view key,
                                                  absl::Duration ttl) {
  DIFFUSIOND_RETURN_IF_ERROR(validate_ttl(ttl));
  MutexLock lock(&mu_);
  expire_leases_locked();
  DIFFUSIOND_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, ready_entry_locked(key));
  ++entry->pins;
  ++entry->leases;
  touch_locked(*entry);
  const LeaseId id = next_lease_id_++;
  leases_[id] = Lease{std::move(entry), clock_->now() + ttl};
  return id;
}

absl::Status ModelCache::renew_lease(LeaseId lease, absl::Duration ttl) {
  DIFFUSIOND_RETURN_IF_ERROR(validate_ttl(ttl));
  MutexLock lock(&mu_);
  expire_leases_locked();
  auto it = leases_.find(lease);
  if (it == leases_.end()) return unknown_lease(lease);
  it->second.deadline = clock_->now() + ttl;
  return absl::OkStatus();
}

absl::Status ModelCache::release_lease(LeaseId lease) {
  MutexLock lock(&mu_);
  expire_leases_locked();
  auto it = leases_.find(lease);
  if (it == leases_.end()) return unknown_lease(lease);
  Entry& entry = *it->second.entry;
  --entry.pins;
  --entry.leases;
  touch_locked(entry);
  leases_.erase(it);
  changed_.signal_all();
  return absl::OkStatus();
}

int ModelCache::expire_leases() {
  MutexLock lock(&mu_);
  return expire_leases_locked();
}

int ModelCache::expire_leases_locked() {
  if (leases_.empty()) return 0;
  const absl::Time now = clock_->now();
  int expired = 0;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    Entry& entry = *it->second.entry;
    --entry.pins;
    --entry.leases;
    it = leases_.erase(it);
    ++expired;
  }
  if (expired > 0) {
    counters_.leases_expired += expired;
    changed_.signal_all();
  }
  return expired;
}

absl::Time ModelCache::next_lease_expiry_locked() const {
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [id, lease] : leases_) next = std::min(next, lease.deadline);
  return next;
}

void ModelCache::await_unpinned_locked(const Entry& entry, absl::Time deadline, const CancellationToken& cancel) {
  // No polling: a pin dropped or an unload cancelled signals changed_, and
  // the wait ends by itself at the next lease expiry on the clock.
  while (entry.pins > 0 && !cancel.cancelled() && clock_->now() < deadline) {
    clock_->wait_until(&changed_, &mu_, std::min(deadline, next_lease_expiry_locked()));
    expire_leases_locked();
  }
}

CacheStats ModelCache::stats() const {
  MutexLock lock(&mu_);
  CacheStats s = counters_;
  s.room_waiting = static_cast<int>(room_line_.size());
  s.budgets.push_back(ram_budget_->snapshot());
  if (vram_budget_ != nullptr) s.budgets.push_back(vram_budget_->snapshot());
  const absl::Time now = clock_->now();
  std::vector<std::pair<uint64_t, CacheEntryStats>> ordered;
  for (const auto& [key, entry] : entries_) {
    CacheEntryStats e;
    e.key = key;
    e.loading = entry->state == EntryState::kLoading;
    e.draining = entry->state == EntryState::kDraining;
    for (Device d : all_devices()) e.bytes[static_cast<int>(d)] = entry->bytes(d);
    e.pins = entry->pins;
    e.leases = entry->leases;
    e.idle_age = entry->pins > 0 || e.loading ? absl::ZeroDuration()
                                              : now - entry->last_use_time;
    ordered.emplace_back(entry->last_use_tick, std::move(e));
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [tick, e] : ordered) s.entries.push_back(std::move(e));
  return s;
}

void ModelCache::publish(const std::vector<CacheEvent>& events) {
  bool freed = false;
  for (const CacheEvent& e : events) {
    freed |= e.kind == CacheEvent::Kind::kEvicted || e.kind == CacheEvent::Kind::kUnloaded;
    if (observer_ != nullptr) observer_->on_cache_event(e);
  }
  if (freed && trim_heap_after_eviction_) release_free_heap_to_os();
}

}  // namespace diffusiond
