#include "core/models/conditioning.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/bounded_text.h"

namespace diffusiond {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> dims;
  const char* names[] = {"L", "M", "N"};
  int unnamed = 0;
  for (int64_t d : shape) dims.push_back(d < 0 ? names[std::min(unnamed++, 2)] : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

const ConditioningInput* find_input(const std::vector<ConditioningInput>& inputs, const std::string& name,
                                    ConditioningInput::Kind kind) {
  for (const ConditioningInput& in : inputs) {
    if (in.name == name && in.kind == kind) return &in;
  }
  return nullptr;
}

void check_tensor(const torch::Tensor& t, const ConditioningInput& in, std::vector<std::string>& problems) {
  bool ok = t.defined() && t.is_floating_point() && t.dim() == static_cast<int64_t>(in.shape.size());
  for (size_t d = 0; ok && d < in.shape.size(); ++d) {
    ok = in.shape[d] < 0 ? t.size(d) > 0 : t.size(d) == in.shape[d];
  }
  if (ok) return;
  problems.push_back(absl::StrCat(
      "\"", in.name, "\" is ", t.defined() ? absl::StrCat(t.is_floating_point() ? "a float " : "a non-float ",
                                                        "[", absl::StrJoin(t.sizes(), ", "), "]")
                                           : "empty",
      ", expected a float ", shape_text(in.shape)));
}

}  // namespace

absl::Status check_conditioning(const Conditioning& given, const std::vector<ConditioningInput>& inputs,
                                const std::string& what) {
  std::vector<std::string> problems;
  for (const ConditioningInput& in : inputs) {
    const bool tensor = in.kind == ConditioningInput::Kind::kTensor;
    const bool present = tensor ? given.tensors.count(in.name) != 0 : given.scalars.count(in.name) != 0;
    if (!present) {
      if (in.required) {
        problems.push_back(absl::StrCat("missing ", tensor ? "tensor" : "scalar", " \"", in.name, "\" (",
                                        in.meaning, ")"));
      }
      continue;
    }
    if (tensor) {
      check_tensor(given.tensors.at(in.name), in, problems);
    } else if (!std::isfinite(given.scalars.at(in.name))) {
      problems.push_back(absl::StrCat("scalar \"", in.name, "\" is not finite"));
    }
  }
  for (const auto& [name, tensor] : given.tensors) {
    if (find_input(inputs, name, ConditioningInput::Kind::kTensor) == nullptr) {
      problems.push_back(absl::StrCat("unexpected tensor \"", bounded(name, 64), "\""));
    }
  }
  for (const auto& [name, value] : given.scalars) {
    if (find_input(inputs, name, ConditioningInput::Kind::kScalar) == nullptr) {
      problems.push_back(absl::StrCat("unexpected scalar \"", bounded(name, 64), "\""));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", bounded_list(problems, 4, 120),
                                                 " (this model takes: ", describe_conditioning(inputs), ")"));
}

double conditioning_scalar(const Conditioning& c, const std::vector<ConditioningInput>& inputs,
                           const std::string& name) {
  if (auto it = c.scalars.find(name); it != c.scalars.end()) return it->second;
  const ConditioningInput* in = find_input(inputs, name, ConditioningInput::Kind::kScalar);
  return in != nullptr ? in->default_value : 0.0;
}

std::string describe_conditioning(const std::vector<ConditioningInput>& inputs) {
  std::vector<std::string> parts;
  for (const ConditioningInput& in : inputs) {
    const bool tensor = in.kind == ConditioningInput::Kind::kTensor;
    std::string part = absl::StrCat(in.name, tensor ? absl::StrCat(" ", shape_text(in.shape)) : " (scalar)");
    if (!in.required) {
      absl::StrAppend(&part, tensor ? " optional" : absl::StrCat(" default ", in.default_value));
    }
    parts.push_back(part);
  }
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<BatchedText> batched_text(const Conditioning& c, const std::string& states, const std::string& mask,
                                         const std::string& what) {
  BatchedText out;
  const torch::Tensor& text = c.tensors.at(states);
  out.states = text.unsqueeze(0);
  if (const auto m = c.tensors.find(mask); m != c.tensors.end()) {
    if (m->second.size(0) != text.size(0)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": \"", mask, "\" has ", m->second.size(0), " entries for ",
                                                     text.size(0), " text tokens"));
    }
    out.mask = m->second.unsqueeze(0);
  }
  return out;
}

}  // namespace diffusiond
