// Peak RSS of real loads, measured in a child process (the
// diffusiond-checkpoint CLI) on a generated 1 GiB bf16 checkpoint: the peak
// must stay within the reservation plus a small constant, which fails if the
// loader keeps source tensors alive while converting them.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/util/bytes.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

constexpr int kTensors = 64;
constexpr int64_t kRows = 2048, kCols = 4096;  // 16 MiB of bf16 each: 1 GiB in all
constexpr int64_t kSlack = 64 * kMiB;

class LoadRss : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    path_ = new std::string(dir_->path("big.safetensors"));
    std::vector<TensorSpec> specs;
    for (int i = 0; i < kTensors; ++i) {
      specs.push_back({absl::StrCat("blocks.", i, ".linear.weight"), DType::kBF16, {kRows, kCols}});
    }
    absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(*path_, specs);
    ASSERT_TRUE(w.ok()) << w.status();
    std::vector<uint16_t> data(kRows * kCols);
    uint32_t state = 12345;
    for (int i = 0; i < kTensors; ++i) {
      for (uint16_t& v : data) {
        state = state * 1664525u + 1013904223u;
        // bf16 with exponents around 2^-8..2^-1, so FP8 codes vary.
        v = static_cast<uint16_t>(0x3B80 + ((state >> 16) & 0x3FF)) | ((state & 1) << 15);
      }
      ASSERT_TRUE((*w)->append(data.data(), data.size() * 2).ok());
    }
    ASSERT_TRUE((*w)->close().ok());
  }
  static void TearDownTestSuite() {
    delete path_;
    delete dir_;
  }

  // Runs the CLI and returns its last stdout line parsed as JSON.
  static nlohmann::json run(const std::string& args) {
    const std::string command = absl::StrCat(DIFFUSIOND_CHECKPOINT_CLI, " ", args, " 2>/dev/null");
    const testing::CommandOutput out = testing::run_command(command);
    EXPECT_EQ(out.exit_status, 0) << command;
    if (out.lines.empty()) return {};
    return nlohmann::json::parse(out.lines.back(), nullptr, /*allow_exceptions=*/false);
  }

  static testing::TempDir* dir_;
  static std::string* path_;
};

testing::TempDir* LoadRss::dir_ = nullptr;
std::string* LoadRss::path_ = nullptr;

void report(const char* what, const nlohmann::json& j) {
  std::printf("%s: reservation %s, accounted %s, peak RSS delta %s, %.2f s\n", what,
              format_bytes(j["reservation_bytes"].get<int64_t>()).c_str(),
              format_bytes(j["accounted_bytes"].get<int64_t>()).c_str(),
              format_bytes(j["peak_rss_delta_bytes"].get<int64_t>()).c_str(),
              j["seconds"].get<double>());
}

TEST_F(LoadRss, Fp8LoadPeaksWithinItsReservationAndFitsABudgetTheSourceWouldNot) {
  const nlohmann::json plan = run(absl::StrCat("plan ", *path_, " --fp8 e4m3fn --json"));
  ASSERT_TRUE(plan.is_object());
  const int64_t reservation = plan["reservation_bytes"].get<int64_t>();
  const int64_t source = plan["source_bytes"].get<int64_t>();
  ASSERT_LT(reservation, source);  // the budget below cannot hold the bf16 source
  const nlohmann::json j =
      run(absl::StrCat("load ", *path_, " --fp8 e4m3fn --budget ", reservation, " --json"));
  ASSERT_TRUE(j.is_object());
  report("fp8 e4m3fn", j);
  EXPECT_EQ(j["reservation_bytes"].get<int64_t>(), reservation);
  EXPECT_EQ(j["accounted_bytes"].get<int64_t>(), int64_t{kTensors} * kRows * kCols);
  EXPECT_EQ(j["committed_bytes"].get<int64_t>(), j["accounted_bytes"].get<int64_t>());
  EXPECT_EQ(j["fp8_tensors"].get<int64_t>(), kTensors);
  EXPECT_LE(j["peak_rss_delta_bytes"].get<int64_t>(), reservation + kSlack);
}

TEST_F(LoadRss, SwitchesReuseTheEvictedCopysMemoryAndPeakWithinOneReservation) {
  const nlohmann::json plan = run(absl::StrCat("plan ", *path_, " --fp8 e4m3fn --json"));
  ASSERT_TRUE(plan.is_object());
  const int64_t reservation = plan["reservation_bytes"].get<int64_t>();
  // Room for one copy: each of the 3 switches evicts the other key's copy
  // and writes over its pages instead of having fresh ones zeroed.
  const nlohmann::json j = run(absl::StrCat("load ", *path_, " --fp8 e4m3fn --budget ", reservation * 3 / 2,
                                            " --switches 3 --json"));
  ASSERT_TRUE(j.is_object());
  report("fp8 e4m3fn, 3 switches", j);
  EXPECT_EQ(j["switch_seconds"].size(), 3u);
  EXPECT_EQ(j["switch_reused_bytes"].get<int64_t>(), j["final_bytes"].get<int64_t>());
  EXPECT_EQ(j["committed_bytes"].get<int64_t>(), j["accounted_bytes"].get<int64_t>());
  EXPECT_LE(j["peak_rss_delta_bytes"].get<int64_t>(), reservation + kSlack);
}

TEST_F(LoadRss, Float32LoadWithFp8OffPeaksWithinItsReservation) {
  const nlohmann::json j = run(absl::StrCat("load ", *path_, " --fp8 off --narrow_weights false --json"));
  ASSERT_TRUE(j.is_object());
  report("fp8 off, float32", j);
  EXPECT_EQ(j["accounted_bytes"].get<int64_t>(), int64_t{kTensors} * kRows * kCols * 4);
  EXPECT_EQ(j["fp8_tensors"].get<int64_t>(), 0);
  EXPECT_LE(j["peak_rss_delta_bytes"].get<int64_t>(),
            j["reservation_bytes"].get<int64_t>() + kSlack);
}

TEST_F(LoadRss, Bfloat16LoadWithFp8OffReadsStraightIntoPlace) {
  const nlohmann::json j =
      run(absl::StrCat("load ", *path_, " --fp8 off --compute_dtype bfloat16 --json"));
  ASSERT_TRUE(j.is_object());
  report("fp8 off, bfloat16", j);
  EXPECT_EQ(j["staging_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(j["accounted_bytes"].get<int64_t>(), int64_t{kTensors} * kRows * kCols * 2);
  EXPECT_LE(j["peak_rss_delta_bytes"].get<int64_t>(),
            j["reservation_bytes"].get<int64_t>() + kSlack);
}

TEST_F(LoadRss, Float32LoadKeepsNarrowWeightsAsStored) {
  // The tool's default, as the daemon's: bf16 weights stay bf16 under
  // float32 compute, so the load reads straight into place at half the RAM.
  const nlohmann::json j = run(absl::StrCat("load ", *path_, " --fp8 off --json"));
  ASSERT_TRUE(j.is_object());
  report("fp8 off, float32, narrow weights", j);
  EXPECT_EQ(j["staging_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(j["accounted_bytes"].get<int64_t>(), int64_t{kTensors} * kRows * kCols * 2);
  EXPECT_LE(j["peak_rss_delta_bytes"].get<int64_t>(), j["reservation_bytes"].get<int64_t>() + kSlack);
}

}  // namespace
}  // namespace diffusiond
