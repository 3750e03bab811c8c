// ZImageConfig's to_json(): the config.json it writes parses back to the
// same config, for the defaults and with every field changed.
#include "core/models/z_image/z_image_config.h"

#include <tuple>

#include "gtest/gtest.h"
#include "tests/testing/config_round_trip.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;

// Every member config.json carries, to compare configs field by field.
auto z_image_fields(const ZImageConfig& c) {
  return std::tie(c.patch_size, c.f_patch_size, c.in_channels, c.dim, c.n_layers, c.n_refiner_layers, c.n_heads,
                  c.norm_eps, c.qk_norm, c.cap_feat_dim, c.rope_theta, c.t_scale, c.axes_dims, c.axes_lens);
}

TEST(ZImageConfigJson, RoundTripsTheDefaultsAndEveryField) {
  ZImageConfig changed;
  changed.patch_size = 1;
  changed.f_patch_size = 2;
  changed.in_channels = 4;
  changed.dim = 256;
  changed.n_layers = 3;
  changed.n_refiner_layers = 1;
  changed.n_heads = 4;
  changed.norm_eps = 1e-6;
  changed.qk_norm = false;
  changed.cap_feat_dim = 128;
  changed.rope_theta = 10000.0;
  changed.t_scale = 500.0;
  changed.axes_dims = {16, 24, 24};
  changed.axes_lens = {64, 32, 16};
  for (const ZImageConfig& c : {ZImageConfig{}, changed}) expect_json_round_trip(c, parse_z_image_config, z_image_fields);
  EXPECT_EQ(to_json(ZImageConfig{}).at("_class_name"), "ZImageTransformer2DModel");
}

}  // namespace
}  // namespace diffusiond
