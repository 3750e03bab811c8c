#include "core/vram/device_placement.h"

#include <cassert>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "kernels/fp8_codec.h"
#include "kernels/scaled_fp8_linear.h"

namespace diffusiond {
namespace {

const torch::Tensor& codes_or_dense(const std::variant<torch::Tensor, Fp8Weight>& stored) {
  if (const Fp8Weight* f8 = std::get_if<Fp8Weight>(&stored)) return f8->codes;
  return std::get<torch::Tensor>(stored);
}

// Where `host`'s bytes sit in `slot` at `offset`, as a tensor of its dtype
// and shape.
torch::Tensor slot_view(const torch::Tensor& slot, int64_t offset, const torch::Tensor& host) {
  return slot.narrow(0, offset, static_cast<int64_t>(host.nbytes())).view(host.scalar_type()).view(host.sizes());
}

// `stored` at `dtype`: FP8 decoded into a fresh tensor, dense converted
// when stored otherwise (the tensor itself when it matches).
torch::Tensor materialize(const std::variant<torch::Tensor, Fp8Weight>& stored, torch::ScalarType dtype) {
  if (const Fp8Weight* f8 = std::get_if<Fp8Weight>(&stored)) {
    absl::StatusOr<torch::Tensor> decoded = f8->decode(dtype);
    assert(decoded.ok() && "decoding a placed FP8 weight failed");
    return *decoded;
  }
  const torch::Tensor& dense = std::get<torch::Tensor>(stored);
  return dense.scalar_type() == dtype ? dense : dense.to(dtype);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DevicePlacement>> DevicePlacement::create(
    const Model& model, VramDevice& device, const BlockLayout& layout, const ResidencyPlan& plan,
    Reservation& reservation, PlacementOptions options) {
  std::unique_ptr<DevicePlacement> p(new DevicePlacement(model, device, plan, std::move(options)));
  const WeightStore& weights = model.weights();
  const auto stored_of = [&](const std::string& name) -> Stored {
    if (const Fp8Weight* f8 = weights.fp8(name)) return *f8;
    return *weights.dense(name);
  };
  // A resident copy: device memory of the same shape and dtype, charged.
  const auto place = [&](const std::string& name) -> absl::Status {
    const Stored host = stored_of(name);
    const torch::Tensor source = codes_or_dense(host).contiguous();
    DIFFUSIOND_RETURN_IF_ERROR(reservation.charge(device_bytes(static_cast<int64_t>(source.nbytes()))));
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor copy, device.allocate(source.sizes().vec(), source.scalar_type()));
    device.copy_async(source, copy);
    Stored placed = copy;
    if (const Fp8Weight* f8 = std::get_if<Fp8Weight>(&host)) placed = Fp8Weight{copy, f8->scale, f8->format};
    p->note_size(host);
    p->resident_.emplace(name, std::move(placed));
    p->where_[name] = Where{};
    return absl::OkStatus();
  };
  for (const std::string& name : layout.globals) DIFFUSIOND_RETURN_IF_ERROR(place(name));

  std::set<const void*> pinned_storages;
  for (size_t b = 0; b < layout.blocks.size(); ++b) {
    const WeightBlock& block = layout.blocks[b];
    if (plan.resident[b]) {
      for (const std::string& name : block.weights) DIFFUSIOND_RETURN_IF_ERROR(place(name));
      continue;
    }
    StreamedBlock s;
    int64_t offset = 0;
    for (const std::string& name : block.weights) {
      const Stored host = stored_of(name);
      const torch::Tensor& t = codes_or_dense(host);
      if (!t.is_contiguous()) {
        return absl::FailedPreconditionError(absl::StrCat("weight ", name, " is not contiguous; it cannot stream"));
      }
      if (pinned_storages.insert(t.storage().data()).second) {
        if (std::unique_ptr<HostPin> pin = device.pin_host(t)) p->pins_.push_back(std::move(pin));
      }
      p->where_[name] = Where{static_cast<int>(p->streamed_.size()), static_cast<int>(s.entries.size())};
      p->note_size(host);
      s.names.push_back(name);
      s.entries.push_back({host, offset});
      offset += device_bytes(static_cast<int64_t>(t.nbytes()));
    }
    assert(offset <= plan.slot_bytes);
    p->streamed_.push_back(std::move(s));
  }
  for (int i = 0; i < plan.slots; ++i) {
    DIFFUSIOND_RETURN_IF_ERROR(reservation.charge(plan.slot_bytes));
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor slot, device.allocate({plan.slot_bytes}, torch::kUInt8));
    p->slots_.push_back(std::move(slot));
  }
  p->slot_block_.assign(plan.slots, -1);
  p->slot_ready_.assign(plan.slots, nullptr);
  // Resident copies are complete before any forward reads them.
  device.synchronize();
  return p;
}

DevicePlacement::~DevicePlacement() {
  // Copies in flight read the RAM copy and write the slots: let them end
  // before either goes.
  device_.synchronize();
}

DeviceForward::DeviceForward(DevicePlacement& placement)
    : ForwardWeights(&placement.model()), placement_(placement), streaming_(!placement.streamed_.empty()) {
  if (!streaming_) return;
  placement_.stream_mu_.lock();
  // The first streamed block copies while the forward's first layers run.
  if (placement_.slot_block_[0] != 0) issue(0);
}

DeviceForward::~DeviceForward() {
  if (streaming_) placement_.stream_mu_.unlock();
}

std::variant<torch::Tensor, Fp8Weight> DeviceForward::stored(absl::string_view name) {
  auto it = placement_.where_.find(name);
  assert(it != placement_.where_.end() && "parameter missing from a placed model");
  const DevicePlacement::Where where = it->second;
  if (where.streamed < 0) return placement_.resident_.find(name)->second;

  ensure(where.streamed);
  const int slots = placement_.plan_.slots;
  const DevicePlacement::SlotEntry& e = placement_.streamed_[where.streamed].entries[where.entry];
  const torch::Tensor& host = codes_or_dense(e.host);
  const torch::Tensor view = slot_view(placement_.slots_[where.streamed % slots], e.offset, host);
  if (const Fp8Weight* f8 = std::get_if<Fp8Weight>(&e.host)) return Fp8Weight{view, f8->scale, f8->format};
  return view;
}

torch::Tensor DeviceForward::param(absl::string_view name, torch::ScalarType dtype) {
  return materialize(stored(name), dtype);
}

std::optional<torch::Tensor> DeviceForward::linear(const torch::Tensor& x, absl::string_view weight,
                                                   absl::string_view bias, torch::ScalarType dtype) {
  const std::variant<torch::Tensor, Fp8Weight> w = stored(weight);
  const Fp8Weight* f8 = std::get_if<Fp8Weight>(&w);
  if (f8 == nullptr) return std::nullopt;
  const torch::Tensor b = bias.empty() ? torch::Tensor() : param(bias, dtype);
  if (placement_.options_.fp8_matmul && dtype != torch::kFloat32) {
    const char* why = f8->format != Fp8Format::kE4M3Fn ? "the weight is e5m2, not e4m3fn"
                                                       : scaled_fp8_linear_unavailable_reason(x, f8->codes, dtype);
    if (placement_.note_choice(weight, why)) {
      try {
        return scaled_fp8_linear(x, f8->codes, f8->scale, b, dtype, placement_.options_.fp8_fast_accum);
      } catch (const c10::Error& e) {
        // cuBLAS may still refuse what the checks allow, on a GPU or libtorch
        // this has not run on: the layer is upcast from now on, and says why.
        placement_.note_refusal(weight, e.what_without_backtrace());
      }
    }
  }
  return torch::linear(x, decode_into_workspace(*f8, dtype), b);
}

torch::Tensor DeviceForward::decode_into_workspace(const Fp8Weight& f8, torch::ScalarType dtype) {
  const int64_t numel = f8.codes.numel();
  if (!workspace_.defined() || workspace_.scalar_type() != dtype || workspace_.numel() < numel) {
    workspace_ = torch::empty({std::max(numel, placement_.largest_fp8_numel_)}, f8.codes.options().dtype(dtype));
    ++workspace_allocations_;
  }
  torch::Tensor decoded = workspace_.narrow(0, 0, numel).view(f8.codes.sizes());
  const absl::Status status = fp8_decode(f8.codes, f8.format, f8.scale, decoded);
  assert(status.ok() && "decoding a placed FP8 weight failed");
  (void)status;
  return decoded;
}

bool DevicePlacement::note_choice(absl::string_view name, const char* unavailable_reason) {
  bool first = false;
  {
    MutexLock lock(&choices_mu_);
    if (refused_.count(name) > 0) return false;
    first = choices_.emplace(std::string(name), unavailable_reason != nullptr ? unavailable_reason : "").second;
  }
  if (first && options_.note) {
    options_.note(absl::StrCat(name, ": ", unavailable_reason == nullptr ? "scaled FP8 matmul"
                                                                         : absl::StrCat("upcast (", unavailable_reason, ")")));
  }
  return unavailable_reason == nullptr;
}

void DevicePlacement::note_refusal(absl::string_view name, absl::string_view what) {
  const std::string reason = absl::StrCat("the scaled matmul failed: ", what);
  {
    MutexLock lock(&choices_mu_);
    refused_.emplace(name);
    choices_[std::string(name)] = reason;
  }
  if (options_.note) options_.note(absl::StrCat(name, ": upcast (", reason, ")"));
}

std::string DevicePlacement::fp8_matmul_summary() const {
  MutexLock lock(&choices_mu_);
  if (choices_.empty()) return "";
  int scaled = 0;
  std::string first_reason;
  for (const auto& [name, why] : choices_) {
    if (why.empty()) {
      ++scaled;
    } else if (first_reason.empty()) {
      first_reason = why;
    }
  }
  const int upcast = static_cast<int>(choices_.size()) - scaled;
  return absl::StrCat("scaled FP8 matmul on ", scaled, " of ", choices_.size(), " FP8 layers",
                      upcast > 0 ? absl::StrCat("; ", upcast, " upcast: ", first_reason) : "");
}

void DeviceForward::ensure(int k) {
  if (k == current_) return;
  const int slots = placement_.plan_.slots;
  const int s = k % slots;
  if (placement_.slot_block_[s] != k) issue(k);
  placement_.device_.compute_wait(*placement_.slot_ready_[s]);
  current_ = k;
  // Prefetch: the next block fills the other slot while this one computes.
  const int n = static_cast<int>(placement_.streamed_.size());
  const int next = (k + 1) % n;
  // Never into the slot in use: with an odd number of streamed blocks the
  // first shares the last one's slot, and waits for the next forward.
  if (next % slots != s && placement_.slot_block_[next % slots] != next) issue(next);
}

void DeviceForward::issue(int k) {
  VramDevice& device = placement_.device_;
  const int s = k % placement_.plan_.slots;
  // The slot's previous block may still be read by compute enqueued so far.
  device.copy_wait(*device.compute_fence());
  int64_t bytes = 0;
  for (const DevicePlacement::SlotEntry& e : placement_.streamed_[k].entries) {
    const torch::Tensor& host = codes_or_dense(e.host);
    device.copy_async(host, slot_view(placement_.slots_[s], e.offset, host));
    bytes += static_cast<int64_t>(host.nbytes());
  }
  placement_.slot_block_[s] = k;
  placement_.slot_ready_[s] = device.copy_fence();
  placement_.bytes_streamed_.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace diffusiond
