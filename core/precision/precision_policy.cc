#include "core/precision/precision_policy.h"

#include "absl/strings/str_cat.h"

namespace diffusiond {

std::string module_path(absl::string_view param_name) {
  const size_t dot = param_name.rfind('.');
  return std::string(dot == absl::string_view::npos ? absl::string_view()
                                                    : param_name.substr(0, dot));
}

absl::StatusOr<PrecisionPolicy> PrecisionPolicy::create(const Fp8Options& fp8,
                                                        const PrecisionDeclaration& declared) {
  PrecisionPolicy policy;
  policy.fp8_ = fp8;
  auto add = [](std::vector<Pattern>* out, const std::vector<std::string>& texts,
                const char* origin) -> absl::Status {
    for (const std::string& text : texts) {
      try {
        out->push_back(Pattern{text, std::regex(text, std::regex::ECMAScript), origin});
      } catch (const std::regex_error& e) {
        return absl::InvalidArgumentError(
            absl::StrCat(origin, " '", text, "' is not a valid regex: ", e.what()));
      }
    }
    return absl::OkStatus();
  };
  if (absl::Status s = add(&policy.skip_, default_fp8_skip_patterns(), "default skip pattern");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = add(&policy.skip_, declared.skip_patterns, "model skip pattern"); !s.ok()) {
    return s;
  }
  if (absl::Status s = add(&policy.keep_in_fp32_, declared.keep_in_fp32_modules,
                           "keep-in-fp32 module");
      !s.ok()) {
    return s;
  }
  return policy;
}

const PrecisionPolicy::Pattern* PrecisionPolicy::first_match(
    const std::vector<Pattern>& patterns, const std::string& module) const {
  for (const Pattern& p : patterns) {
    if (std::regex_search(module, p.re)) return &p;
  }
  return nullptr;
}

StorageDecision PrecisionPolicy::decide(absl::string_view name, ParamKind kind) const {
  const std::string module = module_path(name);
  if (const Pattern* p = first_match(keep_in_fp32_, module); p != nullptr) {
    return {StorageDecision::Kind::kFloat32, absl::StrCat("matches ", p->origin, " '", p->text, "'")};
  }
  if (kind != ParamKind::kLayerWeight) {
    return {StorageDecision::Kind::kCompute,
            absl::StrCat(param_kind_name(kind), " (never FP8)")};
  }
  if (!fp8_.format.has_value()) return {StorageDecision::Kind::kCompute, "FP8 storage off"};
  if (const Pattern* p = first_match(skip_, module); p != nullptr) {
    return {StorageDecision::Kind::kCompute, absl::StrCat("matches ", p->origin, " '", p->text, "'")};
  }
  return {StorageDecision::Kind::kFp8, "layer weight"};
}

}  // namespace diffusiond
