#include "core/util/cancellation_scope.h"

#include <atomic>

namespace diffusiond {
namespace {

thread_local const CancellationToken* current_token = nullptr;
std::atomic<int64_t> checks{0};

}  // namespace

CancellationScope::CancellationScope(CancellationToken token) : token_(std::move(token)), previous_(current_token) {
  current_token = &token_;
}

CancellationScope::~CancellationScope() { current_token = previous_; }

void check_cancelled() {
  checks.fetch_add(1, std::memory_order_relaxed);
  const CancellationToken* token = current_token;
  if (token != nullptr && token->cancelled()) throw OperationCancelled(token->status());
}

int64_t cancellation_checks() { return checks.load(std::memory_order_relaxed); }

}  // namespace diffusiond
