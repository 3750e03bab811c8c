#include "clients/diffusionctl/progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "clients/diffusionctl/format.h"

namespace diffusiond::ctl {
namespace {

constexpr int kBarWidth = 30;

int percent_of(int64_t done, int64_t total) {
  if (done >= total) return 100;
  if (done <= 0) return 0;
  // In double, so done × 100 cannot overflow; done < total keeps it below 100.
  return std::min(99,
                  static_cast<int>(static_cast<double>(done) * 100.0 / static_cast<double>(total)));
}

}  // namespace

int load_percent(const v1::LoadProgress& progress) {
  if (progress.total_bytes() > 0) {
    return percent_of(progress.bytes_read(), progress.total_bytes());
  }
  if (progress.total_tensors() > 0) {
    return percent_of(progress.tensors_done(), progress.total_tensors());
  }
  return 0;
}

std::string progress_bar(int percent, int width) {
  const int filled = std::clamp(percent, 0, 100) * width / 100;
  return absl::StrCat("[", std::string(filled, '#'), std::string(width - filled, '-'), "]");
}

std::string format_load_progress(const v1::LoadProgress& progress) {
  std::string line = absl::StrFormat("%3d%%  %s / %s  %d/%d tensors", load_percent(progress),
                                     short_bytes(progress.bytes_read()), short_bytes(progress.total_bytes()),
                                     progress.tensors_done(), progress.total_tensors());
  // A switch: what it wrote over of the models it evicted.
  if (progress.reused_bytes() > 0) absl::StrAppend(&line, "  (", short_bytes(progress.reused_bytes()), " reused)");
  return line;
}

std::string format_denoise_step(const v1::DenoiseStep& step) {
  std::string line =
      absl::StrFormat("step %d/%d sigma %.3f %.2f s", step.step(), step.steps(), step.sigma(), step.step_seconds());
  // With two experts this is what shows the switch; a daemon older than
  // the field leaves it empty.
  if (!step.model_id().empty()) absl::StrAppend(&line, " model ", step.model_id());
  // A model's first step says what readying it cost (the second expert's
  // load, evicting the first under a budget for one).
  if (step.model_loaded()) absl::StrAppend(&line, absl::StrFormat(" (loaded in %.2f s)", step.load_seconds()));
  if (step.evicted_model_ids_size() > 0) {
    absl::StrAppend(&line, " (evicted ", absl::StrJoin(step.evicted_model_ids(), ", "), ")");
  }
  return line;
}

std::string format_generate_progress(const v1::GenerateProgress& progress) {
  const char* stage = "stage";
  switch (progress.stage()) {
    case v1::GenerateProgress::STAGE_LOAD: stage = "load"; break;
    case v1::GenerateProgress::STAGE_EVICT: stage = "evict"; break;
    case v1::GenerateProgress::STAGE_ENCODE: stage = "encode"; break;
    case v1::GenerateProgress::STAGE_DENOISE: stage = "denoise"; break;
    case v1::GenerateProgress::STAGE_DECODE: stage = "decode"; break;
    default: break;  // a stage newer than this client: still one line
  }
  std::string line = absl::StrFormat("%-7s %s", stage, progress.model_id());
  if (progress.stage() == v1::GenerateProgress::STAGE_DENOISE) {
    absl::StrAppend(&line, absl::StrFormat(" step %d/%d", progress.step(), progress.steps()));
  }
  absl::StrAppend(&line, absl::StrFormat(" %.2f s", progress.seconds()));
  if (!progress.detail().empty()) absl::StrAppend(&line, " (", progress.detail(), ")");
  return line;
}

void LoadProgressPrinter::update(const v1::LoadProgress& progress) {
  const int percent = load_percent(progress);
  if (terminal_) {
    const std::string line = absl::StrCat("loading ", progress_bar(percent, kBarWidth), " ",
                                          format_load_progress(progress));
    *out_ << '\r' << line
          << std::string(drawn_width_ > line.size() ? drawn_width_ - line.size() : 0, ' ');
    out_->flush();
    drawn_width_ = line.size();
    return;
  }
  if (percent < next_percent_) return;
  *out_ << "loading " << format_load_progress(progress) << '\n';
  out_->flush();
  next_percent_ = (percent / 25 + 1) * 25;
}

void LoadProgressPrinter::finish() {
  if (drawn_width_ == 0) return;
  *out_ << '\n';
  out_->flush();
  drawn_width_ = 0;
}

}  // namespace diffusiond::ctl
