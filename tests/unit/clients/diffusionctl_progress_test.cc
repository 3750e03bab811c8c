// Load, denoise and generate progress: the percent, the bar, the lines, and
// how the printer redraws on a terminal and reports quarters otherwise.
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "clients/diffusionctl/progress.h"

namespace diffusiond::ctl {
namespace {

v1::LoadProgress progress(int64_t bytes, int64_t total_bytes, int64_t tensors,
                          int64_t total_tensors) {
  v1::LoadProgress p;
  p.set_bytes_read(bytes);
  p.set_total_bytes(total_bytes);
  p.set_tensors_done(tensors);
  p.set_total_tensors(total_tensors);
  return p;
}

TEST(Progress, PercentByBytesThenTensors) {
  EXPECT_EQ(load_percent(progress(0, 1000, 0, 10)), 0);
  EXPECT_EQ(load_percent(progress(455, 1000, 9, 10)), 45);
  EXPECT_EQ(load_percent(progress(999, 1000, 10, 10)), 99);
  EXPECT_EQ(load_percent(progress(1000, 1000, 10, 10)), 100);
  EXPECT_EQ(load_percent(progress(0, 0, 3, 4)), 75);
  EXPECT_EQ(load_percent(progress(0, 0, 0, 0)), 0);
  const int64_t huge = int64_t{1} << 62;
  EXPECT_EQ(load_percent(progress(huge / 2, huge, 0, 0)), 50);
  EXPECT_EQ(load_percent(progress(huge - 1, huge, 0, 0)), 99);
}

TEST(Progress, Bar) {
  EXPECT_EQ(progress_bar(0, 10), "[----------]");
  EXPECT_EQ(progress_bar(45, 10), "[####------]");
  EXPECT_EQ(progress_bar(100, 10), "[##########]");
  EXPECT_EQ(progress_bar(250, 4), "[####]");
}

TEST(Progress, Lines) {
  EXPECT_EQ(format_load_progress(progress(int64_t{3} << 29, int64_t{3} << 30, 120, 453)),
            " 50%  1.50 GiB / 3.00 GiB  120/453 tensors");
  v1::LoadProgress switched = progress(int64_t{3} << 29, int64_t{3} << 30, 120, 453);
  switched.set_reused_bytes(int64_t{3} << 28);
  EXPECT_EQ(format_load_progress(switched), " 50%  1.50 GiB / 3.00 GiB  120/453 tensors  (768.00 MiB reused)");
  v1::DenoiseStep step;
  step.set_step(3);
  step.set_steps(8);
  step.set_sigma(0.8123f);
  step.set_step_seconds(0.4149);
  EXPECT_EQ(format_denoise_step(step), "step 3/8 sigma 0.812 0.41 s");
  step.set_model_id("wan22-low");  // the model that ran it, as the daemon names it
  EXPECT_EQ(format_denoise_step(step), "step 3/8 sigma 0.812 0.41 s model wan22-low");
  step.set_model_loaded(true);
  step.set_load_seconds(12.345);
  step.add_evicted_model_ids("wan22-high");
  EXPECT_EQ(format_denoise_step(step),
            "step 3/8 sigma 0.812 0.41 s model wan22-low (loaded in 12.35 s) (evicted wan22-high)");
}

TEST(Progress, TerminalRedrawsOneLine) {
  std::ostringstream out;
  LoadProgressPrinter printer(&out, /*terminal=*/true);
  printer.update(progress(512, 1024, 1, 2));
  EXPECT_EQ(out.str(),
            "\rloading [###############---------------]  50%  512 B / 1.00 KiB  1/2 tensors");

  // A shorter line blanks what is left of the longer one.
  out.str("");
  printer.update(progress(1023 * 1024, 2 << 20, 1, 2));
  const std::string longer = out.str();
  out.str("");
  printer.update(progress(1 << 20, 2 << 20, 1, 2));
  const std::string shorter = out.str();
  EXPECT_EQ(shorter.size(), longer.size());
  EXPECT_THAT(shorter, ::testing::EndsWith("1.00 MiB / 2.00 MiB  1/2 tensors   "));
  EXPECT_EQ(shorter.find('\n'), std::string::npos);

  printer.finish();
  printer.finish();
  EXPECT_EQ(out.str(), shorter + "\n");
}

TEST(Progress, WithoutTerminalALinePerQuarter) {
  std::ostringstream out;
  LoadProgressPrinter printer(&out, /*terminal=*/false);
  for (int64_t bytes : {10, 20, 25, 30, 49, 80, 90, 100})
    printer.update(progress(bytes, 100, 0, 4));
  printer.finish();
  EXPECT_EQ(out.str(),
            "loading  25%  25 B / 100 B  0/4 tensors\n"
            "loading  80%  80 B / 100 B  0/4 tensors\n"
            "loading 100%  100 B / 100 B  0/4 tensors\n");
}

TEST(Progress, NothingPrintedForAnAlreadyLoadedModel) {
  std::ostringstream out;
  LoadProgressPrinter printer(&out, /*terminal=*/true);
  printer.finish();
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, GenerateLineNamesTheStageModelAndSeconds) {
  v1::GenerateProgress p;
  p.set_stage(v1::GenerateProgress::STAGE_LOAD);
  p.set_model_id("z/transformer");
  p.set_seconds(2.314);
  p.set_detail("loaded 11.46 GiB");
  EXPECT_EQ(format_generate_progress(p), "load    z/transformer 2.31 s (loaded 11.46 GiB)");
  p.set_stage(v1::GenerateProgress::STAGE_DENOISE);
  p.set_step(3);
  p.set_steps(8);
  p.set_seconds(0.414);
  p.clear_detail();
  EXPECT_EQ(format_generate_progress(p), "denoise z/transformer step 3/8 0.41 s");
  p.set_stage(v1::GenerateProgress::STAGE_EVICT);
  p.set_detail("evicted to make room");
  EXPECT_EQ(format_generate_progress(p), "evict   z/transformer 0.41 s (evicted to make room)");
  p.set_stage(v1::GenerateProgress::STAGE_UNSPECIFIED);
  EXPECT_EQ(format_generate_progress(p), "stage   z/transformer 0.41 s (evicted to make room)");
}

}  // namespace
}  // namespace diffusiond::ctl
