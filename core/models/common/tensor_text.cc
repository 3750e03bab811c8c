#include "core/models/common/tensor_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace diffusiond {

std::string shape_of(const torch::Tensor& t) {
  return t.defined() ? absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]") : "nothing";
}

bool is_integer(const torch::Tensor& t) {
  return t.defined() && !t.is_floating_point() && !t.is_complex() && t.scalar_type() != torch::kBool;
}

}  // namespace diffusiond
