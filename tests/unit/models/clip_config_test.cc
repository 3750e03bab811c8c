// ClipTextConfig's to_json(): the config.json it writes parses back to the
// same config, for the defaults and with every field changed.
#include "core/models/clip/clip_config.h"

#include <tuple>

#include "gtest/gtest.h"
#include "tests/testing/config_round_trip.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::expect_json_round_trip;

// Every member config.json carries, to compare configs field by field.
auto clip_fields(const ClipTextConfig& c) {
  return std::tie(c.vocab_size, c.hidden_size, c.intermediate_size, c.projection_dim, c.num_hidden_layers,
                  c.num_attention_heads, c.max_position_embeddings, c.hidden_act, c.layer_norm_eps, c.eos_token_id,
                  c.with_projection);
}

TEST(ClipTextConfigJson, RoundTripsTheDefaultsAndEveryField) {
  ClipTextConfig changed;
  changed.vocab_size = 1000;
  changed.hidden_size = 64;
  changed.intermediate_size = 128;
  changed.projection_dim = 32;
  changed.num_hidden_layers = 2;
  changed.num_attention_heads = 4;
  changed.max_position_embeddings = 16;
  changed.hidden_act = ClipActivation::kGeluTanh;
  changed.layer_norm_eps = 1e-6;
  changed.eos_token_id = 5;
  changed.with_projection = true;
  ClipTextConfig gelu = changed;
  gelu.hidden_act = ClipActivation::kGelu;
  for (const ClipTextConfig& c : {ClipTextConfig{}, changed, gelu}) expect_json_round_trip(c, parse_clip_text_config, clip_fields);
}

}  // namespace
}  // namespace diffusiond
