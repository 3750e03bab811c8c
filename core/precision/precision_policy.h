// PrecisionPolicy: which parameters get FP8 storage and which stay at
// compute precision (or float32), and why.
//
// A layer weight gets FP8 storage unless its module path (the name without
// ".weight") matches, by regex search, any of: the default skip patterns,
// the model's declared skip patterns, or its keep-in-fp32 modules. Biases,
// norm weights and bare parameters never do. Keep-in-fp32 modules are
// further stored as float32 whatever the compute dtype.
//
// Not here: performing the cast (core/loader) or the FP8 codec (kernels/).
#ifndef DIFFUSIOND_CORE_PRECISION_PRECISION_POLICY_H_
#define DIFFUSIOND_CORE_PRECISION_PRECISION_POLICY_H_

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/precision/param_kind.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

// Applied to every model: positional/patch embeddings, norms, and the
// model's input and output projections are too sensitive for FP8.
inline const std::vector<std::string>& default_fp8_skip_patterns() {
  static const auto* const patterns = new std::vector<std::string>{
      "pos_embed", "patch_embed", "norm", "^proj_in$", "^proj_out$"};
  return *patterns;
}

// What a model declares about its own precision. Either list may be empty.
struct PrecisionDeclaration {
  std::vector<std::string> skip_patterns;         // regexes, searched
  std::vector<std::string> keep_in_fp32_modules;  // regexes, searched
};

enum class Fp8Scaling {
  kNone,          // scale 1.0: cast as is (diffusers/ComfyUI layerwise casting)
  kPerTensorMax,  // scale = max|w| / largest finite, so the range is used fully
};

struct Fp8Options {
  std::optional<Fp8Format> format;  // empty: FP8 storage off
  Fp8Scaling scaling = Fp8Scaling::kNone;
};

struct StorageDecision {
  enum class Kind { kFp8, kCompute, kFloat32 };
  Kind kind = Kind::kCompute;
  std::string reason;  // for plan output, e.g. "matches skip pattern 'norm'"
};

// Immutable; thread-safe.
class PrecisionPolicy {
 public:
  // Compiles the patterns. INVALID_ARGUMENT naming a pattern that is not a
  // valid ECMAScript regex.
  static absl::StatusOr<PrecisionPolicy> create(const Fp8Options& fp8,
                                                const PrecisionDeclaration& declared);

  const Fp8Options& fp8() const { return fp8_; }
  // Decides the storage of parameter `name` of kind `kind`.
  StorageDecision decide(absl::string_view name, ParamKind kind) const;

 private:
  struct Pattern {
    std::string text;
    std::regex re;
    const char* origin;  // "default skip pattern", "model skip pattern", ...
  };
  const Pattern* first_match(const std::vector<Pattern>& patterns,
                             const std::string& module) const;

  Fp8Options fp8_;
  std::vector<Pattern> skip_;          // defaults + model skip patterns
  std::vector<Pattern> keep_in_fp32_;  // also skip FP8
};

// Returns the module path of a parameter: its name without the last
// dotted component ("layers.0.attn.to_q.weight" -> "layers.0.attn.to_q").
std::string module_path(absl::string_view param_name);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PRECISION_PRECISION_POLICY_H_
