// QwenImageConfig's to_json(): the config.json it writes parses back to
// the same config, for the defaults and with every field changed.
#include "core/models/qwen_image/qwen_image_config.h"

#include <tuple>

#include "gtest/gtest.h"
#include "tests/testing/config_round_trip.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;

// Every member config.json carries, to compare configs field by field.
auto qwen_image_fields(const QwenImageConfig& c) {
  return std::tie(c.patch_size, c.in_channels, c.out_channels, c.num_layers, c.attention_head_dim,
                  c.num_attention_heads, c.joint_attention_dim, c.axes_dims_rope, c.zero_cond_t);
}

TEST(QwenImageConfigJson, RoundTripsTheDefaultsAndEveryField) {
  QwenImageConfig changed;
  changed.patch_size = 1;
  changed.in_channels = 32;
  changed.out_channels = 8;
  changed.num_layers = 2;
  changed.attention_head_dim = 64;
  changed.num_attention_heads = 2;
  changed.joint_attention_dim = 256;
  changed.axes_dims_rope = {8, 28, 28};
  changed.zero_cond_t = true;
  for (const QwenImageConfig& c : {QwenImageConfig{}, changed}) expect_json_round_trip(c, parse_qwen_image_config, qwen_image_fields);
  EXPECT_EQ(to_json(QwenImageConfig{}).at("_class_name"), "QwenImageTransformer2DModel");
}

}  // namespace
}  // namespace diffusiond
