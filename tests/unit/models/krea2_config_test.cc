// Krea2Config's to_json(): the config.json it writes parses back to the
// same config, for the defaults and with every field changed.
#include "core/models/krea2/krea2_config.h"

#include <tuple>

#include "gtest/gtest.h"
#include "tests/testing/config_round_trip.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;

// Every member config.json carries, to compare configs field by field.
auto krea2_fields(const Krea2Config& c) {
  return std::tie(c.in_channels, c.num_layers, c.attention_head_dim, c.num_attention_heads, c.num_key_value_heads,
                  c.intermediate_size, c.timestep_embed_dim, c.text_hidden_dim, c.num_text_layers,
                  c.text_num_attention_heads, c.text_num_key_value_heads, c.text_intermediate_size,
                  c.num_layerwise_text_blocks, c.num_refiner_text_blocks, c.axes_dims_rope, c.rope_theta, c.norm_eps);
}

TEST(Krea2ConfigJson, RoundTripsTheDefaultsAndEveryField) {
  Krea2Config changed;
  changed.in_channels = 16;
  changed.num_layers = 2;
  changed.attention_head_dim = 64;
  changed.num_attention_heads = 4;
  changed.num_key_value_heads = 2;
  changed.intermediate_size = 256;
  changed.timestep_embed_dim = 128;
  changed.text_hidden_dim = 128;
  changed.num_text_layers = 3;
  changed.text_num_attention_heads = 4;
  changed.text_num_key_value_heads = 2;
  changed.text_intermediate_size = 192;
  changed.num_layerwise_text_blocks = 1;
  changed.num_refiner_text_blocks = 3;
  changed.axes_dims_rope = {16, 24, 24};
  changed.rope_theta = 10000.0;
  changed.norm_eps = 1e-6;
  for (const Krea2Config& c : {Krea2Config{}, changed}) expect_json_round_trip(c, parse_krea2_config, krea2_fields);
  EXPECT_EQ(to_json(Krea2Config{}).at("_class_name"), "Krea2Transformer2DModel");
}

}  // namespace
}  // namespace diffusiond
