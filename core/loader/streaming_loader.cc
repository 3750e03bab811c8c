#include "core/loader/streaming_loader.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/precision/torch_dtype.h"
#include "core/loader/parallel_parts.h"
#include "core/loader/weight_allocation.h"
#include "core/memory/anonymous_mapping.h"
#include "core/memory/recycled_pages.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"
#include "kernels/fp8_codec.h"
#include "kernels/fp8_cpu.h"

namespace diffusiond {
namespace {

using Action = PlannedTensor::Action;

// Reads a one-element F32/F16/BF16 scale tensor.
absl::StatusOr<float> read_scale(const Checkpoint& ckpt, const TensorRecord& t) {
  unsigned char raw[4] = {0, 0, 0, 0};
  DIFFUSIOND_RETURN_IF_ERROR(ckpt.read(t, reinterpret_cast<char*>(raw)));
  float value = 0;
  if (t.dtype == DType::kF32) {
    std::memcpy(&value, raw, 4);
  } else {
    const uint16_t bits = static_cast<uint16_t>(raw[0] | (raw[1] << 8));
    value = t.dtype == DType::kF16 ? static_cast<float>(c10::Half(bits, c10::Half::from_bits()))
                                   : static_cast<float>(c10::BFloat16(bits, c10::BFloat16::from_bits()));
  }
  if (!std::isfinite(value) || value <= 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        ckpt.path(), ": scale tensor '", t.name, "' holds ", value,
        ", expected a positive finite number"));
  }
  return value;
}

// A read or a cast is split across the cores in parts of at least this
// many bytes: below it a part's start costs more than it saves.
constexpr int64_t kMinPartBytes = int64_t{2} << 20;
// How far past what it reads a load asks the storage to fetch ahead
// (will_need), so a cold file streams while the cores cast: a few chunks.
constexpr int64_t kReadAheadBytes = int64_t{64} << 20;

class TensorStreamer {
 public:
  TensorStreamer(const Checkpoint& ckpt, const LoadPlan& plan, Reservation& reservation)
      : ckpt_(ckpt), plan_(plan), reservation_(reservation), advised_end_(ckpt.files().size(), 0) {}

  absl::Status load(const PlannedTensor& p, WeightStore& store) {
    const TensorRecord& src = *p.source;
    DIFFUSIOND_RETURN_IF_ERROR(reservation_.charge(p.final_bytes));
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, allocate_weight(src.shape, p.storage_dtype, Residency::kLazy));
    assert(static_cast<int64_t>(out.nbytes()) == p.final_bytes);
    switch (p.action) {
      case Action::kRead:
        DIFFUSIOND_RETURN_IF_ERROR(read_direct(src, static_cast<char*>(out.data_ptr())));
        store.add(p.name, std::move(out));
        return absl::OkStatus();
      case Action::kFp8Keep: {
        DIFFUSIOND_RETURN_IF_ERROR(read_direct(src, static_cast<char*>(out.data_ptr())));
        Fp8Weight w{std::move(out), 1.0f, p.fp8_format};
        if (p.scale != nullptr) {
          DIFFUSIOND_ASSIGN_OR_RETURN(w.scale, read_scale(ckpt_, *p.scale));
        }
        store.add(p.name, std::move(w));
        return absl::OkStatus();
      }
      case Action::kCast: {
        torch::Tensor flat = out.view({-1});
        const torch::ScalarType from = storage_scalar_type(src.dtype);
        DIFFUSIOND_RETURN_IF_ERROR(for_each_chunk(src, destination(out), [&](int64_t first, int64_t count, char* bytes) {
          flat.narrow(0, first, count).copy_(torch::from_blob(bytes, {count}, torch::TensorOptions().dtype(from)));
        }));
        store.add(p.name, std::move(out));
        return absl::OkStatus();
      }
      case Action::kFp8Encode:
        return encode(p, std::move(out), store);
    }
    return absl::InternalError("unknown plan action");
  }

  // The staging buffer is allocated lazily and charged once.
  absl::Status ensure_staging() {
    if (plan_.staging_bytes == 0 || staging_.defined()) return absl::OkStatus();
    DIFFUSIOND_RETURN_IF_ERROR(reservation_.charge(plan_.staging_bytes));
    staging_ = torch::empty({plan_.staging_bytes}, torch::kUInt8);
    return absl::OkStatus();
  }

  void release_staging() {
    if (!staging_.defined()) return;
    staging_ = torch::Tensor();
    reservation_.uncharge(plan_.staging_bytes);
  }

 private:
  char* staging() { return static_cast<char*>(staging_.data_ptr()); }

  // Asks the storage for the `n` bytes of `t` from `offset` and the window
  // past them, beyond what was asked before (a hint per byte, once).
  void read_ahead(const TensorRecord& t, int64_t offset, int64_t n) {
    int64_t& advised = advised_end_[t.file_index];
    const int64_t begin = std::max(advised, t.file_offset + offset);
    const int64_t end = t.file_offset + offset + n + kReadAheadBytes;
    if (begin >= end) return;
    ckpt_.will_need(t, begin - t.file_offset, end - begin);
    advised = end;
  }

  // Where a chunk's consume writes: made resident part by part first.
  struct Destination {
    char* base = nullptr;  // null: consume writes nothing there
    int64_t item = 0;      // bytes per element
  };
  static Destination destination(const torch::Tensor& out) {
    return {static_cast<char*>(out.data_ptr()), static_cast<int64_t>(out.element_size())};
  }

  // Reads `t` straight into its final storage, the parts in parallel.
  absl::Status read_direct(const TensorRecord& t, char* dst) {
    read_ahead(t, 0, t.nbytes);
    return run_parts(t.nbytes, dtype_size(t.dtype), kMinPartBytes, [&](int64_t begin, int64_t end) -> absl::Status {
      DIFFUSIOND_RETURN_IF_ERROR(make_resident(dst + begin, end - begin));
      return ckpt_.read_range(t, begin, end - begin, dst + begin);
    });
  }

  // Streams `t` through the staging buffer in chunks of whole elements.
  // Each chunk is cut into parts that are read, their span of `out` made
  // resident, and handed to consume(element_offset, element_count, bytes)
  // on the cores in parallel, one part's cast overlapping another's read
  // and the kernel zeroing both parts' fresh pages at once; consume must be
  // safe to call from several threads on disjoint ranges.
  template <typename Consume>
  absl::Status for_each_chunk(const TensorRecord& t, Destination out, Consume&& consume) {
    const int64_t item = dtype_size(t.dtype);
    const int64_t chunk_elements = std::max<int64_t>(1, plan_.staging_bytes / item);
    for (int64_t first = 0; first < t.numel; first += chunk_elements) {
      const int64_t count = std::min(chunk_elements, t.numel - first);
      read_ahead(t, first * item, count * item);
      DIFFUSIOND_RETURN_IF_ERROR(
          run_parts(count * item, item, kMinPartBytes, [&](int64_t begin, int64_t end) -> absl::Status {
            const int64_t part_first = first + begin / item, part_count = (end - begin) / item;
            if (out.base != nullptr) {
              DIFFUSIOND_RETURN_IF_ERROR(make_resident(out.base + part_first * out.item, part_count * out.item));
            }
            DIFFUSIOND_RETURN_IF_ERROR(ckpt_.read_range(t, first * item + begin, end - begin, staging() + begin));
            consume(part_first, part_count, staging() + begin);
            return absl::OkStatus();
          }));
    }
    return absl::OkStatus();
  }

  absl::Status encode(const PlannedTensor& p, torch::Tensor codes, WeightStore& store) {
    const TensorRecord& src = *p.source;
    DIFFUSIOND_ASSIGN_OR_RETURN(FloatKind kind, float_kind_of(storage_scalar_type(src.dtype)));
    float scale = 1.0f;
    if (plan_.fp8.scaling == Fp8Scaling::kPerTensorMax) {
      // A first pass finds max|w|; reading twice keeps staging to one chunk.
      std::mutex mu;
      float max_abs = 0.0f;
      DIFFUSIOND_RETURN_IF_ERROR(for_each_chunk(src, Destination{}, [&](int64_t, int64_t count, char* bytes) {
        const float part_max = abs_max_cpu(bytes, kind, count);
        std::lock_guard<std::mutex> lock(mu);
        max_abs = std::max(max_abs, part_max);
      }));
      if (std::isfinite(max_abs) && max_abs > 0.0f) {
        scale = max_abs / fp8_max_finite(p.fp8_format);
      }
    }
    uint8_t* dst = codes.data_ptr<uint8_t>();
    DIFFUSIOND_RETURN_IF_ERROR(for_each_chunk(src, destination(codes), [&](int64_t first, int64_t count, char* bytes) {
      fp8_encode_cpu(bytes, kind, count, p.fp8_format, 1.0f / scale, dst + first);
    }));
    store.add(p.name, Fp8Weight{std::move(codes), scale, p.fp8_format});
    return absl::OkStatus();
  }

  const Checkpoint& ckpt_;
  const LoadPlan& plan_;
  Reservation& reservation_;
  torch::Tensor staging_;
  std::vector<int64_t> advised_end_;  // per file: where read_ahead's hints reach
};

absl::StatusOr<std::unique_ptr<WeightStore>> stream_all(const Checkpoint& ckpt,
                                                        const LoadPlan& plan,
                                                        Reservation& reservation,
                                                        const StreamOptions& options) {
  auto store = std::make_unique<WeightStore>(plan.compute_dtype);
  TensorStreamer streamer(ckpt, plan, reservation);
  DIFFUSIOND_RETURN_IF_ERROR(streamer.ensure_staging());
  // Pages recycled from the models this load evicted are resident but
  // charged to no one: they may only fill what the reservation has left
  // (allocate_weight keeps that as it takes them or maps fresh ones).
  RecycledPages* const recycled = RecycledPages::current();
  if (recycled != nullptr) recycled->limit_to(reservation.uncharged_bytes());
  LoadProgress progress;
  progress.total_bytes = plan.source_bytes;
  progress.total_tensors = static_cast<int64_t>(plan.tensors.size());
  for (const PlannedTensor& p : plan.tensors) {
    if (options.cancel.cancelled()) {
      return absl::Status(options.cancel.status().code(),
                          absl::StrCat("load of ", ckpt.path(), " cancelled after ", progress.tensors_done, " of ",
                                       progress.total_tensors, " tensors: ", options.cancel.status().message()));
    }
    DIFFUSIOND_RETURN_IF_ERROR(streamer.load(p, *store));
    progress.bytes_read += p.source->nbytes;
    ++progress.tensors_done;
    if (recycled != nullptr) progress.reused_bytes = recycled->reused_bytes();
    if (options.on_progress) options.on_progress(progress);
  }
  streamer.release_staging();
  return store;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WeightStore>> stream_weights(const Checkpoint& checkpoint,
                                                            const LoadPlan& plan,
                                                            Reservation& reservation,
                                                            const StreamOptions& options) {
  if (reservation.uncharged_bytes() < plan.reservation_bytes()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "load of ", checkpoint.path(), " needs a reservation of ", plan.reservation_bytes(),
        " bytes, has ", reservation.uncharged_bytes()));
  }
  const int64_t charged_before = reservation.charged_bytes();
  absl::StatusOr<std::unique_ptr<WeightStore>> store =
      status_of(absl::StrCat("loading ", checkpoint.path()),
                [&] { return stream_all(checkpoint, plan, reservation, options); });
  if (!store.ok()) {
    // The partial store is gone; give its charge back with it.
    reservation.uncharge(reservation.charged_bytes() - charged_before);
    return store.status();
  }
  assert(reservation.charged_bytes() - charged_before == plan.final_bytes);
  assert((*store)->nbytes() == plan.final_bytes);
  return store;
}

}  // namespace diffusiond
