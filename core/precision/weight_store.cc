#include "core/precision/weight_store.h"

#include <cassert>

#include "absl/strings/str_cat.h"

namespace diffusiond {

void WeightStore::add(const std::string& name, torch::Tensor dense) {
  nbytes_ += static_cast<int64_t>(dense.nbytes());
  const bool inserted = weights_.emplace(name, std::move(dense)).second;
  assert(inserted);
  (void)inserted;
}

void WeightStore::add(const std::string& name, Fp8Weight fp8) {
  nbytes_ += fp8.nbytes();
  ++fp8_count_;
  const bool inserted = weights_.emplace(name, std::move(fp8)).second;
  assert(inserted);
  (void)inserted;
}

bool WeightStore::is_fp8(absl::string_view name) const { return fp8(name) != nullptr; }

const Fp8Weight* WeightStore::fp8(absl::string_view name) const {
  auto it = weights_.find(name);
  return it == weights_.end() ? nullptr : std::get_if<Fp8Weight>(&it->second);
}

const torch::Tensor* WeightStore::dense(absl::string_view name) const {
  auto it = weights_.find(name);
  return it == weights_.end() ? nullptr : std::get_if<torch::Tensor>(&it->second);
}

absl::StatusOr<torch::Tensor> WeightStore::materialize(absl::string_view name,
                                                       torch::ScalarType dtype) const {
  auto it = weights_.find(name);
  if (it == weights_.end()) {
    return absl::NotFoundError(absl::StrCat("model has no parameter '", name, "'"));
  }
  if (const Fp8Weight* f = std::get_if<Fp8Weight>(&it->second)) return f->decode(dtype);
  const torch::Tensor& t = std::get<torch::Tensor>(it->second);
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  for (const auto& [name, unused] : weights_) out.push_back(name);
  return out;
}

}  // namespace diffusiond
