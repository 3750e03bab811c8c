// Child process for attention_rss_test: one attention over a sequence the
// size of a 1024x1024 Z-Image step (4096 image + 128 caption tokens), run
// with a 4 MiB score budget, printing "peak_rss_delta_bytes=<n>".
#include <torch/utils.h>

#include <cstdio>
#include <cstdlib>

#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/common/attention.h"

int main(int argc, char** argv) {
  using namespace diffusiond;
  tune_allocator_for_serving();
  torch::manual_seed(0);
  const int64_t seq = 4096 + 128;
  const auto q = torch::randn({1, 2, seq, 16}), k = torch::randn({1, 2, seq, 16}), v = torch::randn({1, 2, seq, 16});
  const torch::Tensor mask = torch::ones({1, seq}, torch::kBool);
  AttentionOptions options;
  options.prefer_native = false;
  options.max_scores_bytes = (argc > 1 ? std::atoll(argv[1]) : 4) << 20;
  if (!reset_peak_rss().ok()) return 1;
  const absl::StatusOr<ProcessMemory> before = read_process_memory();
  const torch::Tensor out = attention(q, k, v, mask, options);
  const absl::StatusOr<ProcessMemory> after = read_process_memory();
  if (!before.ok() || !after.ok() || out.size(2) != seq) return 1;
  std::printf("peak_rss_delta_bytes=%lld\n",
              static_cast<long long>(after->peak_rss_bytes - before->rss_bytes));
  return 0;
}
