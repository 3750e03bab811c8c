// CacheValue: the base of anything a ModelCache holds (a loaded model).
//
// The cache owns values through this interface so that core/cache does not
// depend on core/models. Destroying a value must free the memory its
// entry's Charge stands for: that destructor is the eviction hook.
#ifndef DIFFUSIOND_CORE_CACHE_CACHE_VALUE_H_
#define DIFFUSIOND_CORE_CACHE_CACHE_VALUE_H_

namespace diffusiond {

class CacheValue {
 public:
  virtual ~CacheValue() = default;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CACHE_CACHE_VALUE_H_
