// T5Config's to_json(): the config.json it writes parses back to the same
// config, for the defaults and with every field changed (T5 and UMT5).
#include "core/models/t5/t5_config.h"

#include <tuple>

#include "gtest/gtest.h"
#include "tests/testing/config_round_trip.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;

// Every member config.json carries, to compare configs field by field.
auto t5_fields(const T5Config& c) {
  return std::tie(c.umt5, c.vocab_size, c.d_model, c.d_kv, c.d_ff, c.num_layers, c.num_heads,
                  c.relative_attention_num_buckets, c.relative_attention_max_distance, c.layer_norm_epsilon,
                  c.feed_forward);
}

TEST(T5ConfigJson, RoundTripsTheDefaultsAndEveryField) {
  T5Config changed;
  changed.umt5 = true;
  changed.vocab_size = 500;
  changed.d_model = 64;
  changed.d_kv = 16;
  changed.d_ff = 128;
  changed.num_layers = 2;
  changed.num_heads = 4;
  changed.relative_attention_num_buckets = 8;
  changed.relative_attention_max_distance = 20;
  changed.layer_norm_epsilon = 1e-5;
  changed.feed_forward = T5FeedForward::kGatedGelu;
  T5Config gated_t5 = changed;
  gated_t5.umt5 = false;
  for (const T5Config& c : {T5Config{}, changed, gated_t5}) expect_json_round_trip(c, parse_t5_config, t5_fields);
}

}  // namespace
}  // namespace diffusiond
