#include "core/loader/parallel_parts.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "core/util/exception_status.h"

namespace diffusiond {

absl::Status run_parts(int64_t n, int64_t align, int64_t min_part,
                       absl::FunctionRef<absl::Status(int64_t begin, int64_t end)> part) {
  if (n <= 0) return absl::OkStatus();
  align = std::max<int64_t>(1, align);
  const int64_t most = std::max<int64_t>(1, n / std::max<int64_t>(min_part, 1));
  const int64_t parts = std::clamp<int64_t>(at::get_num_threads(), 1, most);
  // Each part a whole number of `align` units; the last takes the rest.
  const int64_t units = (n + align - 1) / align;
  const int64_t per_part = (units + parts - 1) / parts * align;
  std::vector<absl::Status> results(parts);
  const auto run = [&](int64_t i) {
    const int64_t begin = std::min(n, i * per_part);
    const int64_t end = std::min(n, begin + per_part);
    if (begin < end) results[i] = status_of("a load's part", [&] { return part(begin, end); });
  };
  if (parts == 1) {
    run(0);
  } else {
    at::parallel_for(0, parts, 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) run(i);
    });
  }
  for (const absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace diffusiond
