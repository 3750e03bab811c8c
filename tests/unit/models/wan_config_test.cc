// WanConfig's to_json(): the config.json it writes parses back to the same
// config, for the defaults and with every field changed.
#include "core/models/wan/wan_config.h"

#include <tuple>

#include "gtest/gtest.h"
#include "tests/testing/config_round_trip.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;

// Every member config.json carries, to compare configs field by field.
auto wan_fields(const WanConfig& c) {
  return std::tie(c.patch_size, c.num_attention_heads, c.attention_head_dim, c.in_channels, c.out_channels,
                  c.text_dim, c.freq_dim, c.ffn_dim, c.num_layers, c.cross_attn_norm, c.qk_norm, c.eps,
                  c.rope_max_seq_len);
}

TEST(WanConfigJson, RoundTripsTheDefaultsAndEveryField) {
  WanConfig changed;
  changed.patch_size = {2, 1, 1};
  changed.num_attention_heads = 4;
  changed.attention_head_dim = 64;
  changed.in_channels = 4;
  changed.out_channels = 8;
  changed.text_dim = 256;
  changed.freq_dim = 64;
  changed.ffn_dim = 512;
  changed.num_layers = 2;
  changed.cross_attn_norm = false;
  changed.qk_norm = false;
  changed.eps = 1e-5;
  changed.rope_max_seq_len = 512;
  for (const WanConfig& c : {WanConfig{}, changed}) expect_json_round_trip(c, parse_wan_config, wan_fields);
  EXPECT_EQ(to_json(WanConfig{}).at("_class_name"), "WanTransformer3DModel");
}

}  // namespace
}  // namespace diffusiond
