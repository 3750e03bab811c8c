#include "core/cache/pin.h"

#include <utility>

#include "core/cache/internal/entry.h"
#include "core/cache/model_cache.h"

namespace diffusiond {

Pin::Pin(Pin&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)),
      entry_(std::move(other.entry_)) {}

Pin& Pin::operator=(Pin&& other) noexcept {
  if (this != &other) {
    reset();
    cache_ = std::exchange(other.cache_, nullptr);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

Pin::~Pin() { reset(); }

const std::string& Pin::key() const { return entry_->key; }

// The value pointer is stable while pinned: eviction and unload never touch
// a pinned entry, so reading it without the cache lock is safe.
CacheValue* Pin::value() const { return entry_->value.get(); }

void Pin::reset() {
  if (entry_ != nullptr) cache_->unpin(*entry_);
  entry_.reset();
  cache_ = nullptr;
}

}  // namespace diffusiond
