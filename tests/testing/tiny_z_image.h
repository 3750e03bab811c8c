// The small Z-Image configuration unit tests generate random models of:
// dim 64, 2 heads of 32 (RoPE axes 8 + 12 + 12), a 32-wide caption, one
// noise and one context refiner, and `n_layers` main layers.
#ifndef DIFFUSIOND_TESTS_TESTING_TINY_Z_IMAGE_H_
#define DIFFUSIOND_TESTS_TESTING_TINY_Z_IMAGE_H_

#include <cstdint>

#include "core/models/z_image/z_image_config.h"

namespace diffusiond::testing {

inline ZImageConfig tiny_z_image_config(int64_t n_layers = 1) {
  ZImageConfig c;
  c.dim = 64;
  c.n_heads = 2;
  c.axes_dims = {8, 12, 12};
  c.n_layers = n_layers;
  c.n_refiner_layers = 1;
  c.cap_feat_dim = 32;
  return c;
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_TINY_Z_IMAGE_H_
