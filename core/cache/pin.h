// Pin: an RAII handle that keeps one cache entry loaded and unevictable
// while it lives.
#ifndef DIFFUSIOND_CORE_CACHE_PIN_H_
#define DIFFUSIOND_CORE_CACHE_PIN_H_

#include <cassert>
#include <memory>
#include <string>

#include "core/cache/cache_value.h"

namespace diffusiond {

class ModelCache;
namespace cache_internal {
struct Entry;
}

// Returned by ModelCache::get_or_load. Move-only; destruction unpins. A Pin
// must not outlive its ModelCache. The value it exposes may be used from any
// thread while the Pin lives; the Pin object itself is not thread-safe.
class Pin {
 public:
  Pin() = default;
  Pin(Pin&& other) noexcept;
  Pin& operator=(Pin&& other) noexcept;
  ~Pin();

  explicit operator bool() const { return entry_ != nullptr; }
  const std::string& key() const;
  CacheValue* value() const;

  // Returns the value as the concrete type the loader created.
  // REQUIRES: the value is a T.
  template <typename T>
  T* as() const {
    T* typed = dynamic_cast<T*>(value());
    assert(typed != nullptr);
    return typed;
  }

  // Unpins now; the Pin is empty afterwards.
  void reset();

 private:
  friend class ModelCache;
  Pin(ModelCache* cache, std::shared_ptr<cache_internal::Entry> entry)
      : cache_(cache), entry_(std::move(entry)) {}

  ModelCache* cache_ = nullptr;
  std::shared_ptr<cache_internal::Entry> entry_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CACHE_PIN_H_
