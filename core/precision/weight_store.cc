#include "core/precision/weight_store.h"

#include <cassert>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/onednn_cpu.h"

namespace diffusiond {

void WeightStore::add(const std::string& name, torch::Tensor dense) {
  nbytes_ += static_cast<int64_t>(dense.nbytes());
  add_view(name, std::move(dense));
}

void WeightStore::add(const std::string& name, Fp8Weight fp8) {
  nbytes_ += fp8.nbytes();
  ++fp8_count_;
  add_view(name, std::move(fp8));
}

void WeightStore::add_view(const std::string& name, Stored stored) {
  const bool inserted = weights_.emplace(name, std::move(stored)).second;
  assert(inserted);
  (void)inserted;
}

absl::Status WeightStore::split_rows(absl::string_view fused,
                                     const std::vector<std::pair<std::string, int64_t>>& parts) {
  auto it = weights_.find(fused);
  if (it == weights_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("no parameter '", fused, "' to split"));
  }
  const Fp8Weight* f8 = std::get_if<Fp8Weight>(&it->second);
  const torch::Tensor& whole = f8 != nullptr ? f8->codes : std::get<torch::Tensor>(it->second);
  int64_t rows = 0;
  for (const auto& [name, n] : parts) {
    if (n <= 0 || (name != fused && weights_.count(name) != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot split '", fused, "' into '", name, "'"));
    }
    rows += n;
  }
  if (whole.dim() < 1 || whole.size(0) != rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter '", fused, "' has ", whole.dim() < 1 ? 0 : whole.size(0),
        " rows, but the split asks for ", rows));
  }
  Stored original = std::move(it->second);
  weights_.erase(it);
  if (f8 != nullptr) --fp8_count_;
  int64_t first = 0;
  for (const auto& [name, n] : parts) {
    if (const Fp8Weight* w = std::get_if<Fp8Weight>(&original)) {
      add_view(name, Fp8Weight{w->codes.narrow(0, first, n), w->scale, w->format});
      ++fp8_count_;
    } else {
      add_view(name, std::get<torch::Tensor>(original).narrow(0, first, n));
    }
    first += n;
  }
  return absl::OkStatus();
}

absl::Status WeightStore::reshape(absl::string_view name, const std::vector<int64_t>& shape) {
  auto it = weights_.find(name);
  torch::Tensor* dense = it == weights_.end() ? nullptr : std::get_if<torch::Tensor>(&it->second);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (dense == nullptr || dense->numel() != numel || !dense->is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot reshape parameter '", name, "' to [", absl::StrJoin(shape, ", "), "]: ",
        it == weights_.end() ? "no such parameter"
        : dense == nullptr   ? "it is stored as FP8"
        : dense->numel() != numel ? absl::StrCat("it has ", dense->numel(), " elements")
                                  : "it is not contiguous, so a view would copy"));
  }
  *dense = dense->view(shape);
  return absl::OkStatus();
}

absl::Status WeightStore::rename(absl::string_view from, const std::string& to) {
  auto it = weights_.find(from);
  if (it == weights_.end() || weights_.count(to) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot rename parameter '", from, "' to '", to, "'"));
  }
  Stored stored = std::move(it->second);
  weights_.erase(it);
  add_view(to, std::move(stored));
  return absl::OkStatus();
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
  if (const Fp8Weight* f = std::get_if<Fp8Weight>(&it->second)) {
    if (cpu_packing_) {
      std::shared_lock<std::shared_mutex> lock(pack_mu_);
      if (packed_locked(name)) return Fp8Weight{onednn_unpack_fp8_codes(f->codes), f->scale, f->format}.decode(dtype);
    }
    return f->decode(dtype);
  }
  const torch::Tensor& t = std::get<torch::Tensor>(it->second);
  if (cpu_packing_) {
    std::shared_lock<std::shared_mutex> lock(pack_mu_);
    if (packed_locked(name)) {
      const torch::Tensor plain = onednn_unpack_bf16_weight(t);
      return plain.scalar_type() == dtype ? plain : plain.to(dtype);
    }
  }
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

std::optional<torch::Tensor> WeightStore::packed_linear(absl::string_view name, const torch::Tensor& x,
                                                        const torch::Tensor& bias) const {
  if (!cpu_packing_) return std::nullopt;
  auto it = weights_.find(name);
  if (it == weights_.end()) return std::nullopt;
  const torch::Tensor* w = std::get_if<torch::Tensor>(&it->second);
  const Fp8Weight* f8 = std::get_if<Fp8Weight>(&it->second);
  {
    std::shared_lock<std::shared_mutex> lock(pack_mu_);
    if (packed_locked(name)) {
      if (w != nullptr) return onednn_bf16_linear_packed(x, *w, bias);
      // Decoded in the packed order: the packed bf16 weight.
      absl::StatusOr<torch::Tensor> decoded = f8->decode(torch::kBFloat16);
      if (!decoded.ok()) return std::nullopt;
      return onednn_bf16_linear_packed(x, *decoded, bias);
    }
    if (unpackable_.count(name) != 0) return std::nullopt;
  }
  {
    // Packed once, while no other linear reads it: the shared holders
    // above finish their products first.
    std::unique_lock<std::shared_mutex> lock(pack_mu_);
    if (!packed_locked(name) && unpackable_.count(name) == 0) {
      const bool packed = w != nullptr ? onednn_pack_bf16_weight(*w) : onednn_pack_fp8_codes(f8->codes);
      (packed ? packed_ : unpackable_).emplace(name);
    }
  }
  return packed_linear(name, x, bias);
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  for (const auto& [name, unused] : weights_) out.push_back(name);
  return out;
}

}  // namespace diffusiond
