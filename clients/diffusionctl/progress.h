// Progress of a running call, written to stderr while results go to stdout:
// a load's progress bar and the lines of a denoise or a generate.
//
// Not here: results (format.h).
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_PROGRESS_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_PROGRESS_H_

#include <ostream>
#include <string>

#include "diffusiond/v1/denoise_service.pb.h"
#include "diffusiond/v1/model_service.pb.h"
#include "diffusiond/v1/pipeline_service.pb.h"

namespace diffusiond::ctl {

// Percent done, 0 to 100, by bytes (by tensors when the total bytes are
// unknown); floored, so 100 means done.
int load_percent(const v1::LoadProgress& progress);

// "[######------]" with `width` cells between the brackets.
std::string progress_bar(int percent, int width);

// " 45%  1.20 GiB / 2.67 GiB  120/453 tensors"
std::string format_load_progress(const v1::LoadProgress& progress);

// "step 3/8 sigma 0.812 0.41 s", and " model ID" when the step names the
// model that ran it (which expert, with Denoise's expert_2).
std::string format_denoise_step(const v1::DenoiseStep& step);

// One line per pipeline stage, e.g.
// "load    z/transformer 2.31 s (loaded 11.46 GiB)" or
// "denoise z/transformer step 3/8 0.41 s".
std::string format_generate_progress(const v1::GenerateProgress& progress);

// Shows one load's progress. On a terminal, a single line redrawn in place
// with '\r'; otherwise a line each time another quarter is reached, so logs
// stay short. Not thread-safe; `out` is not owned and must outlive it.
class LoadProgressPrinter {
 public:
  LoadProgressPrinter(std::ostream* out, bool terminal) : out_(out), terminal_(terminal) {}

  void update(const v1::LoadProgress& progress);
  // Ends the redrawn line, if one was drawn. Idempotent.
  void finish();

 private:
  std::ostream* const out_;
  const bool terminal_;
  size_t drawn_width_ = 0;  // of the line on screen, to blank a longer one
  int next_percent_ = 25;   // the next quarter to report without a terminal
};

}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_PROGRESS_H_
