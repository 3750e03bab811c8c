// Child process for hostile_config_test: opens and plans the model folder
// argv[1] (whose config.json declares absurd counts), printing
// "status_code=<n>" and "peak_rss_delta_bytes=<n>".
#include <cstdio>

#include "core/checkpoint/checkpoint.h"
#include "core/memory/process_memory.h"
#include "core/models/model_loader.h"

int main(int argc, char** argv) {
  using namespace diffusiond;
  if (argc != 2) return 2;
  if (!reset_peak_rss().ok()) return 1;
  const absl::StatusOr<ProcessMemory> before = read_process_memory();
  absl::Status status;
  {
    absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(argv[1]);
    status = c.ok() ? plan_model(**c, ModelLoadOptions{}).status() : c.status();
  }
  const absl::StatusOr<ProcessMemory> after = read_process_memory();
  if (!before.ok() || !after.ok()) return 1;
  std::printf("status_code=%d\npeak_rss_delta_bytes=%lld\n", static_cast<int>(status.code()),
              static_cast<long long>(after->peak_rss_bytes - before->rss_bytes));
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  return 0;
}
