// How error messages name a tensor.
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_TENSOR_TEXT_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_TENSOR_TEXT_H_

#include <torch/types.h>

#include <string>

namespace diffusiond {

// "[2, 77]", or "nothing" for an undefined tensor.
std::string shape_of(const torch::Tensor& t);

// An integer dtype, bool excluded (token ids, counts).
bool is_integer(const torch::Tensor& t);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_TENSOR_TEXT_H_
