// Budget: the byte accounting of one memory device, and the two RAII tokens
// drawn against it: Reservation (admitted, not yet held) and Charge (held by
// a cache entry).
//
// Not here: eviction (core/cache decides what to free to make room) and
// probing the machine (process_memory.h, cgroup.h).
#ifndef DIFFUSIOND_CORE_MEMORY_BUDGET_H_
#define DIFFUSIOND_CORE_MEMORY_BUDGET_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/util/mutex.h"
#include "core/memory/device.h"

namespace diffusiond {

class Reservation;
class Charge;

// A consistent view of one budget's counters, taken under its lock.
struct BudgetSnapshot {
  Device device = Device::kCpu;
  int64_t capacity_bytes = 0;
  int64_t reserved_bytes = 0;   // admitted loads that have not committed yet
  int64_t committed_bytes = 0;  // held by cache entries
  int64_t high_water_bytes = 0; // max of reserved + committed ever seen
  int64_t available_bytes() const {
    return capacity_bytes - reserved_bytes - committed_bytes;
  }
};

// Thread-safe accounting of one device's bytes. Invariant: reserved +
// committed never exceeds capacity. A Budget must outlive every Reservation
// and Charge drawn from it.
class Budget {
 public:
  // REQUIRES: capacity_bytes >= 0.
  Budget(Device device, int64_t capacity_bytes);
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;
  ~Budget();

  Device device() const { return device_; }
  int64_t capacity_bytes() const { return capacity_bytes_; }

  // Reserves `bytes` if reserved + committed + bytes fits the capacity.
  // Returns RESOURCE_EXHAUSTED naming needed and available bytes otherwise.
  // REQUIRES: bytes >= 0.
  absl::StatusOr<Reservation> reserve(int64_t bytes);

  BudgetSnapshot snapshot() const;
  // Starts the high-water mark again from what is held now, so that it
  // measures one interval (a call's peak in tests/unit/engine/call_rss_child).
  void reset_high_water();
  int64_t available_bytes() const { return snapshot().available_bytes(); }

 private:
  friend class Reservation;
  friend class Charge;

  void release_reserved(int64_t bytes);
  void commit_reserved(int64_t reserved_bytes, int64_t committed_bytes);
  void release_committed(int64_t bytes);

  const Device device_;
  const int64_t capacity_bytes_;

  mutable Mutex mu_;
  int64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t committed_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t high_water_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Bytes committed to a holder (a cache entry). Move-only; destruction returns
// the bytes to the budget, so the holder must free the memory they stand for
// before its Charge goes. Not thread-safe; one owner at a time.
class Charge {
 public:
  Charge() = default;  // holds nothing
  Charge(Charge&& other) noexcept;
  Charge& operator=(Charge&& other) noexcept;
  ~Charge();

  int64_t bytes() const { return bytes_; }
  Device device() const;
  // Returns the bytes to the budget now; the Charge then holds nothing.
  void release();
  // Takes over `other`'s bytes. REQUIRES: both are empty or drawn from the
  // same budget.
  void merge(Charge&& other);

 private:
  friend class Reservation;
  Charge(Budget* budget, int64_t bytes) : budget_(budget), bytes_(bytes) {}

  Budget* budget_ = nullptr;
  int64_t bytes_ = 0;
};

// Bytes admitted for one load. Allocations are charged against it as the
// load makes them; commit() turns what was charged into a Charge and gives
// the rest back. Destruction without commit releases everything, so every
// failure path returns the bytes. Move-only; not thread-safe.
class Reservation {
 public:
  Reservation() = default;  // holds nothing
  Reservation(Reservation&& other) noexcept;
  Reservation& operator=(Reservation&& other) noexcept;
  ~Reservation();

  int64_t reserved_bytes() const { return reserved_bytes_; }
  int64_t charged_bytes() const { return charged_bytes_; }
  int64_t uncharged_bytes() const { return reserved_bytes_ - charged_bytes_; }
  Device device() const;
  bool holds_bytes() const { return budget_ != nullptr && reserved_bytes_ > 0; }

  // Records an allocation of `bytes` drawn against this reservation. Returns
  // RESOURCE_EXHAUSTED, and records nothing, if it would exceed the
  // reservation: a load may never hold more than it was admitted for.
  absl::Status charge(int64_t bytes);
  // Records that `bytes` charged earlier were freed (a staging buffer).
  // REQUIRES: bytes <= charged_bytes().
  void uncharge(int64_t bytes);
  // Gives back reserved bytes above max(new_reserved_bytes, charged_bytes()).
  void shrink_to(int64_t new_reserved_bytes);
  // Converts the charged bytes into a Charge and releases the rest. The
  // reservation holds nothing afterwards.
  Charge commit() &&;

 private:
  friend class Budget;
  Reservation(Budget* budget, int64_t bytes)
      : budget_(budget), reserved_bytes_(bytes) {}
  void release();

  Budget* budget_ = nullptr;
  int64_t reserved_bytes_ = 0;
  int64_t charged_bytes_ = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MEMORY_BUDGET_H_
