// The streaming loader: reads a planned checkpoint tensor by tensor into its
// final storage under an admitted reservation (the caller's: the loader
// never asks for memory itself, and knows nothing of the cache). Each tensor goes straight
// into its final tensor or through one reusable staging buffer a chunk at a
// time, so the source bytes of a tensor are gone before the next is read and
// peak memory tracks the reservation.
#ifndef DIFFUSIOND_CORE_LOADER_STREAMING_LOADER_H_
#define DIFFUSIOND_CORE_LOADER_STREAMING_LOADER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/checkpoint/checkpoint.h"
#include "core/loader/load_plan.h"
#include "core/memory/budget.h"
#include "core/precision/weight_store.h"
#include "core/util/cancellation.h"

namespace diffusiond {

struct LoadProgress {
  int64_t bytes_read = 0;  // checkpoint bytes consumed so far
  int64_t total_bytes = 0;
  int64_t tensors_done = 0;
  int64_t total_tensors = 0;
  // The models evicted to admit this load, reported once, right after
  // admission and before any tensor is read; empty on every other event.
  std::vector<std::string> evicted;
  // Weight memory taken over from the models this load evicted, so far: the
  // bytes the kernel did not have to zero again (core/memory/recycled_pages.h).
  int64_t reused_bytes = 0;
};

struct StreamOptions {
  // Called after each tensor, on the loading thread. Optional.
  std::function<void(const LoadProgress&)> on_progress;
  // Checked before each tensor; once cancelled the load stops with the
  // token's reason (CANCELLED, or UNAVAILABLE for a drain). Default: never.
  CancellationToken cancel;
};

// Streams `plan` into a new WeightStore, charging every allocation to
// `reservation`. REQUIRES: reservation.uncharged_bytes() >=
// plan.reservation_bytes(). On success the reservation is charged exactly
// plan.final_bytes (the staging buffer is freed and uncharged). On any error
// (I/O, bad data, cancellation) everything allocated is freed before
// returning; the caller's reservation then releases the bytes.
absl::StatusOr<std::unique_ptr<WeightStore>> stream_weights(const Checkpoint& checkpoint,
                                                            const LoadPlan& plan,
                                                            Reservation& reservation,
                                                            const StreamOptions& options = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LOADER_STREAMING_LOADER_H_
