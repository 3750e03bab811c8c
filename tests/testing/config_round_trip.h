// The promise each architecture's config header makes: to_json() writes a
// config.json that the architecture's parser reads back to the same config.
//
// Not here: which members a test compares (each test ties its own).
#ifndef DIFFUSIOND_TESTS_TESTING_CONFIG_ROUND_TRIP_H_
#define DIFFUSIOND_TESTS_TESTING_CONFIG_ROUND_TRIP_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond::testing {

// Expects `parse` (a parse_<arch>_config) to read to_json(config), as the
// text a file would hold, back to a config whose `fields` (a std::tie of
// the members config.json carries) equal config's.
template <typename Config, typename Parse, typename Fields>
void expect_json_round_trip(const Config& config, Parse parse, Fields fields) {
  const nlohmann::json written = to_json(config);
  const absl::StatusOr<Config> parsed = parse(written.dump(), "config.json");
  ASSERT_THAT(parsed, IsOk()) << written.dump();
  EXPECT_EQ(fields(*parsed), fields(config)) << written.dump();
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_CONFIG_ROUND_TRIP_H_
