// The floating-point element types the kernels read and write, without
// libtorch types so CUDA sources can share them.
#ifndef DIFFUSIOND_KERNELS_FLOAT_KIND_H_
#define DIFFUSIOND_KERNELS_FLOAT_KIND_H_

namespace diffusiond {

enum class FloatKind : int {
  kF32 = 0,   // IEEE binary32
  kBF16 = 1,  // bfloat16: the top 16 bits of a binary32
  kF16 = 2,   // IEEE binary16
};

inline constexpr int float_kind_bytes(FloatKind kind) {
  return kind == FloatKind::kF32 ? 4 : 2;
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_FLOAT_KIND_H_
