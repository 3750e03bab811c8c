#include "core/memory/budget.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/bytes.h"

namespace diffusiond {

Budget::Budget(Device device, int64_t capacity_bytes)
    : device_(device), capacity_bytes_(capacity_bytes) {
  assert(capacity_bytes >= 0);
}

Budget::~Budget() {
  // Outstanding tokens would write into freed memory later.
  MutexLock lock(&mu_);
  assert(reserved_bytes_ == 0 && committed_bytes_ == 0);
}

absl::StatusOr<Reservation> Budget::reserve(int64_t bytes) {
  assert(bytes >= 0);
  MutexLock lock(&mu_);
  const int64_t available = capacity_bytes_ - reserved_bytes_ - committed_bytes_;
  if (bytes > available) {
    return absl::ResourceExhaustedError(absl::StrCat(
        device_name(device_), " budget cannot reserve ", format_bytes(bytes),
        ": available ", format_bytes(available), " of ",
        format_bytes(capacity_bytes_)));
  }
  reserved_bytes_ += bytes;
  high_water_bytes_ =
      std::max(high_water_bytes_, reserved_bytes_ + committed_bytes_);
  return Reservation(this, bytes);
}

void Budget::reset_high_water() {
  MutexLock lock(&mu_);
  high_water_bytes_ = reserved_bytes_ + committed_bytes_;
}

BudgetSnapshot Budget::snapshot() const {
  MutexLock lock(&mu_);
  BudgetSnapshot s;
  s.device = device_;
  s.capacity_bytes = capacity_bytes_;
  s.reserved_bytes = reserved_bytes_;
  s.committed_bytes = committed_bytes_;
  s.high_water_bytes = high_water_bytes_;
  return s;
}

void Budget::release_reserved(int64_t bytes) {
  MutexLock lock(&mu_);
  assert(bytes >= 0 && bytes <= reserved_bytes_);
  reserved_bytes_ -= bytes;
}

void Budget::commit_reserved(int64_t reserved_bytes, int64_t committed_bytes) {
  MutexLock lock(&mu_);
  assert(reserved_bytes <= reserved_bytes_);
  assert(committed_bytes <= reserved_bytes);
  reserved_bytes_ -= reserved_bytes;
  committed_bytes_ += committed_bytes;
}

void Budget::release_committed(int64_t bytes) {
  MutexLock lock(&mu_);
  assert(bytes >= 0 && bytes <= committed_bytes_);
  committed_bytes_ -= bytes;
}

// ---------------------------------------------------------------- Charge

Charge::Charge(Charge&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Charge& Charge::operator=(Charge&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Charge::~Charge() { release(); }

Device Charge::device() const {
  return budget_ != nullptr ? budget_->device() : Device::kCpu;
}

void Charge::release() {
  if (budget_ != nullptr) budget_->release_committed(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

void Charge::merge(Charge&& other) {
  if (other.budget_ == nullptr) return;
  assert(budget_ == nullptr || budget_ == other.budget_);
  budget_ = std::exchange(other.budget_, nullptr);
  bytes_ += std::exchange(other.bytes_, 0);
}

// ----------------------------------------------------------- Reservation

Reservation::Reservation(Reservation&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      reserved_bytes_(std::exchange(other.reserved_bytes_, 0)),
      charged_bytes_(std::exchange(other.charged_bytes_, 0)) {}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    reserved_bytes_ = std::exchange(other.reserved_bytes_, 0);
    charged_bytes_ = std::exchange(other.charged_bytes_, 0);
  }
  return *this;
}

Reservation::~Reservation() { release(); }

Device Reservation::device() const {
  return budget_ != nullptr ? budget_->device() : Device::kCpu;
}

absl::Status Reservation::charge(int64_t bytes) {
  assert(bytes >= 0);
  if (bytes > reserved_bytes_ - charged_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "allocation of ", format_bytes(bytes), " exceeds the reservation: ",
        format_bytes(charged_bytes_), " of ", format_bytes(reserved_bytes_),
        " already charged"));
  }
  charged_bytes_ += bytes;
  return absl::OkStatus();
}

void Reservation::uncharge(int64_t bytes) {
  assert(bytes >= 0 && bytes <= charged_bytes_);
  charged_bytes_ -= bytes;
}

void Reservation::shrink_to(int64_t new_reserved_bytes) {
  const int64_t target = std::max(new_reserved_bytes, charged_bytes_);
  if (budget_ == nullptr || target >= reserved_bytes_) return;
  budget_->release_reserved(reserved_bytes_ - target);
  reserved_bytes_ = target;
}

Charge Reservation::commit() && {
  if (budget_ == nullptr) return Charge();
  Budget* const budget = std::exchange(budget_, nullptr);
  const int64_t reserved = std::exchange(reserved_bytes_, 0);
  const int64_t charged = std::exchange(charged_bytes_, 0);
  budget->commit_reserved(reserved, charged);
  return Charge(budget, charged);
}

void Reservation::release() {
  if (budget_ != nullptr) budget_->release_reserved(reserved_bytes_);
  budget_ = nullptr;
  reserved_bytes_ = 0;
  charged_bytes_ = 0;
}

}  // namespace diffusiond
