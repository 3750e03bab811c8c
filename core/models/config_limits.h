// Config limits: the sane bounds every architecture's config fields are
// held to, and the check that a config.json's block counts agree with the
// tensors its checkpoint holds.
//
// A config.json is input like any other: its counts size the parameter
// table (and, through it, everything planned), so a count is checked here
// before anything proportional to it is allocated. Planning then costs
// memory proportional to the checkpoint's header, never to a declared
// number.
//
// Not here: each architecture's own invariants (head_dim = sum of RoPE
// axes, divisibility), which stay in its config's validate().
#ifndef DIFFUSIOND_CORE_MODELS_CONFIG_LIMITS_H_
#define DIFFUSIOND_CORE_MODELS_CONFIG_LIMITS_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/checkpoint.h"

namespace diffusiond {

// Bounds far above any released model (FLUX.1: 19 + 38 blocks, width 3072;
// Qwen3-235B: 94 layers, vocab 151936, width 4096 / MLP 12288) and far
// below what would exhaust memory while planning.
inline constexpr int64_t kMaxConfigLayers = 1024;        // blocks of one kind
inline constexpr int64_t kMaxConfigWidth = 1 << 17;      // hidden / MLP / embedding widths
inline constexpr int64_t kMaxConfigHeads = 1024;         // attention heads
inline constexpr int64_t kMaxConfigHeadDim = 1024;       // per-head width
inline constexpr int64_t kMaxConfigChannels = 1 << 14;   // image / latent / conv channels
inline constexpr int64_t kMaxConfigPatch = 64;           // patch side
inline constexpr int64_t kMaxConfigVocab = 1 << 21;      // token ids
inline constexpr int64_t kMaxConfigPositions = 1 << 22;  // RoPE / position table rows
inline constexpr double kMaxConfigReal = 1e12;           // theta, scales, eps upper end

// One integer field and the closed range it must lie in.
struct IntField {
  const char* name;
  int64_t value;
  int64_t min;
  int64_t max;
};

// Checks each field lies in [min, max]. INVALID_ARGUMENT for the first that
// does not, as "<architecture> config: <name> is <v>, expected at most <max>"
// (or "a positive integer", "a non-negative integer", "at least <min>").
absl::Status check_int_fields(absl::string_view architecture, std::initializer_list<IntField> fields);

// Checks `value` is finite and in (0, kMaxConfigReal] (`allow_zero`: [0,
// ...]). INVALID_ARGUMENT naming the field otherwise.
absl::Status check_positive_real(absl::string_view architecture, const char* name, double value,
                                 bool allow_zero = false);

// Largest N + 1 over names "<prefix>N.<rest>", 0 when none matches.
int64_t count_indexed_blocks(const std::vector<std::string>& names, absl::string_view prefix);

// The checkpoint's tensor names mapped by `canonical` (dropped ones left
// out). Memory is proportional to the checkpoint's header.
std::vector<std::string> canonical_tensor_names(
    const Checkpoint& checkpoint,
    const std::function<std::optional<std::string>(absl::string_view)>& canonical);

// Checks that the count `field` declared by the config at `config_path`
// equals the number of "<prefix>N." blocks in `names` (the tensors of
// `checkpoint_path`). INVALID_ARGUMENT naming both otherwise.
absl::Status check_declared_count(absl::string_view config_path, const char* field, int64_t declared,
                                  absl::string_view checkpoint_path, const std::vector<std::string>& names,
                                  absl::string_view prefix);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_CONFIG_LIMITS_H_
