// ParamSpec: one entry of an architecture's parameter table (canonical
// name, shape, kind), and the check that loaded weights hold exactly the
// table — shared by every architecture's create().
#ifndef DIFFUSIOND_CORE_MODELS_PARAM_TABLE_H_
#define DIFFUSIOND_CORE_MODELS_PARAM_TABLE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/precision/param_kind.h"
#include "core/precision/weight_store.h"

namespace diffusiond {

struct ParamSpec {
  std::string name;  // canonical (diffusers / transformers) name
  std::vector<int64_t> shape;
  ParamKind kind;
};

// A fused checkpoint tensor (e.g. an original qkv) and the consecutive row
// blocks it splits into on load.
struct FusedSplit {
  std::string fused;
  std::vector<std::pair<std::string, int64_t>> parts;  // name, rows
};

// OK when `weights` holds every parameter of `table` at its shape and
// nothing else; FAILED_PRECONDITION naming the first missing, misshapen or
// unexpected tensor otherwise, as "<architecture> checkpoint ...".
absl::Status check_weights_match_table(const WeightStore& weights, const std::vector<ParamSpec>& table,
                                       absl::string_view architecture);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_PARAM_TABLE_H_
