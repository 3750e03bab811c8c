// A fake EngineApi for the gRPC services' tests: each operation answers
// what the test set, and records what it was asked.
#ifndef DIFFUSIOND_TESTS_TESTING_FAKE_ENGINE_H_
#define DIFFUSIOND_TESTS_TESTING_FAKE_ENGINE_H_

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/engine_api.h"
#include "core/util/mutex.h"

namespace diffusiond::testing {

class FakeEngine final : public EngineApi {
 public:
  // What the next calls answer. Set before the calls, read by them.
  absl::StatusOr<ModelInfo> find_result = absl::NotFoundError("not cached");
  absl::StatusOr<ModelInfo> load_result = absl::UnimplementedError("load");
  std::vector<LoadProgress> load_progress;  // published to the watcher first
  absl::StatusOr<UnloadResult> unload_result = absl::UnimplementedError("unload");
  std::vector<ModelInfo> models;
  absl::StatusOr<LeaseId> lease_result = absl::UnimplementedError("lease");
  // stats() answers these in turn, then the last one again.
  std::vector<CacheStats> stats_sequence = {CacheStats{}};
  // vram_stats() answers these in turn, then the last one again; none (the
  // default) answers empty, as an engine without a device does.
  std::vector<CacheStats> vram_sequence;
  // make_room() reserves from this budget; RESOURCE_EXHAUSTED past it. A
  // make_room that succeeds reports these keys as the ones it evicted.
  Budget ram{Device::kCpu, int64_t{1} << 20};
  std::vector<std::string> make_room_evicts;
  // step() answers this, and records the inputs it got.
  absl::StatusOr<NamedTensors> step_result = absl::UnimplementedError("step");
  NamedTensors step_inputs;
  std::vector<AdapterRequest> step_adapters;
  // encode_text() answers this, and records the model and the request.
  absl::StatusOr<EncodedText> encode_result = absl::UnimplementedError("encode_text");
  TextEncoding encode_request;
  int encodes = 0;
  // condition_text() answers this, and records the request.
  absl::StatusOr<ConditionedText> condition_result = absl::UnimplementedError("condition_text");
  ConditionerRequest condition_request;
  int conditions = 0;
  // ready() records every name it was asked for, and answers a model of
  // `models` by its id, else what load() answers for the name as a path.
  std::vector<std::string> readied;
  // denoise() records its request and, when this is OK, tells its
  // on_segment (the request's model, segment 0) and on_step once per step,
  // then answers zero latents of the request's shape.
  absl::Status denoise_status = absl::UnimplementedError("denoise");
  EngineDenoiseRequest denoise_request;
  // decode_image() answers black pixels [8h, 8w, 3] for latents [C, h, w]
  // when this is OK.
  absl::Status decode_status = absl::UnimplementedError("decode_image");
  // What the next encode_text() and decode_image() calls report (then
  // cleared): a model loaded again, models evicted.
  CallReport next_report;

  std::atomic<int> loads{0}, finds{0};
  std::string last_path, last_model_id;

  absl::StatusOr<ModelInfo> load(const ModelLoadRequest& request, const LoadWatcher& watcher) override {
    ++loads;
    record(request);
    for (const LoadProgress& p : load_progress) {
      if (watcher.on_progress) watcher.on_progress(p);
    }
    return load_result;
  }
  absl::StatusOr<ModelInfo> find(const ModelLoadRequest& request) override {
    ++finds;
    record(request);
    return find_result;
  }
  absl::StatusOr<UnloadResult> unload(const std::string& model_id, const UnloadOptions&) override {
    MutexLock lock(&mu_);
    last_model_id = model_id;
    return unload_result;
  }
  std::vector<ModelInfo> list() const override { return models; }
  CacheStats stats() const override {
    MutexLock lock(&mu_);
    const CacheStats s = stats_sequence[std::min(next_stats_, stats_sequence.size() - 1)];
    ++next_stats_;
    return s;
  }
  std::optional<CacheStats> vram_stats() const override {
    MutexLock lock(&mu_);
    if (vram_sequence.empty()) return std::nullopt;
    const CacheStats s = vram_sequence[std::min(next_vram_stats_, vram_sequence.size() - 1)];
    ++next_vram_stats_;
    return s;
  }
  absl::StatusOr<LeaseId> acquire_lease(const std::string& model_id, absl::Duration) override {
    MutexLock lock(&mu_);
    last_model_id = model_id;
    return lease_result;
  }
  absl::Status renew_lease(LeaseId, absl::Duration) override { return absl::OkStatus(); }
  absl::Status release_lease(LeaseId) override { return absl::OkStatus(); }
  absl::StatusOr<Reservation> make_room(int64_t bytes, Device, std::vector<std::string>* evicted) override {
    absl::StatusOr<Reservation> room = ram.reserve(bytes);
    if (room.ok() && evicted != nullptr) evicted->insert(evicted->end(), make_room_evicts.begin(), make_room_evicts.end());
    return room;
  }
  absl::StatusOr<NamedTensors> step(const std::string& model_id, const NamedTensors& inputs, const CancellationToken&,
                                    const std::vector<AdapterRequest>& adapters) override {
    MutexLock lock(&mu_);
    last_model_id = model_id;
    step_inputs = inputs;
    step_adapters = adapters;
    return step_result;
  }
  absl::StatusOr<torch::Tensor> denoise(const EngineDenoiseRequest& request, const DenoiseOptions& options) override {
    {
      MutexLock lock(&mu_);
      denoise_request = request;
      if (!denoise_status.ok()) return denoise_status;
    }
    SegmentStart start;
    start.model_id = request.model.id();
    if (request.on_segment) request.on_segment(start);
    for (int step = 1; step <= request.steps; ++step) {
      if (options.on_step) options.on_step(StepEvent{step, request.steps, 0.5f, absl::Milliseconds(1), 0});
    }
    return torch::zeros(request.latent_shape);
  }
  absl::StatusOr<ModelInfo> inspect(const ModelLoadRequest&) override { return absl::UnimplementedError("inspect"); }
  absl::StatusOr<CallFloor> least_call_room(const ModelLoadRequest&, const ActivationQuery&) override {
    return absl::UnimplementedError("least_call_room");
  }
  absl::StatusOr<ModelHandle> ready(const ModelLoadRequest& request, std::optional<ModelRole>,
                                    const LoadWatcher& watcher) override {
    {
      MutexLock lock(&mu_);
      readied.push_back(request.path);
    }
    for (const ModelInfo& m : models) {
      if (m.model_id == request.path) return ModelHandle(m, request, /*loaded=*/false);
    }
    absl::StatusOr<ModelInfo> loaded = load(request, watcher);
    if (!loaded.ok()) return loaded.status();
    return ModelHandle(*loaded, request, /*loaded=*/true);
  }
  absl::StatusOr<CallResult<EncodedText>> encode_text(const ModelHandle& encoder, const TextEncoding& request,
                                                      const CancellationToken&, const TextEncoderAdapters&) override {
    MutexLock lock(&mu_);
    last_model_id = encoder.id();
    encode_request = request;
    ++encodes;
    if (!encode_result.ok()) return encode_result.status();
    return CallResult<EncodedText>{*encode_result, std::exchange(next_report, {})};
  }
  absl::StatusOr<CallResult<ConditionedText>> condition_text(const ModelHandle& conditioner,
                                                             const ConditionerRequest& request,
                                                             const CancellationToken&) override {
    MutexLock lock(&mu_);
    last_model_id = conditioner.id();
    condition_request = request;
    ++conditions;
    if (!condition_result.ok()) return condition_result.status();
    return CallResult<ConditionedText>{*condition_result, std::exchange(next_report, {})};
  }
  absl::StatusOr<CallResult<torch::Tensor>> decode_image(const ModelHandle&, const torch::Tensor& latents,
                                                         const CancellationToken&) override {
    MutexLock lock(&mu_);
    if (!decode_status.ok()) return decode_status;
    const int64_t h = latents.size(-2) * 8, w = latents.size(-1) * 8;
    return CallResult<torch::Tensor>{torch::zeros({h, w, 3}, torch::kUInt8), std::exchange(next_report, {})};
  }
  // decode_video() hands black frames [8h, 8w, 3] for latents [C, F, h, w],
  // 1 + 4 (F - 1) of them, when decode_status is OK.
  absl::StatusOr<CallResult<int64_t>> decode_video(const ModelHandle&, const torch::Tensor& latents,
                                                   const VideoFrameSink& on_frame, const CancellationToken&) override {
    {
      MutexLock lock(&mu_);
      if (!decode_status.ok()) return decode_status;
    }
    const int64_t h = latents.size(-2) * 8, w = latents.size(-1) * 8, frames = 1 + 4 * (latents.size(-3) - 1);
    for (int64_t i = 0; i < frames; ++i) {
      if (absl::Status s = on_frame(torch::zeros({h, w, 3}, torch::kUInt8), i); !s.ok()) return s;
    }
    MutexLock lock(&mu_);
    return CallResult<int64_t>{frames, std::exchange(next_report, {})};
  }
  // encode_image() answers zero latents [1, 16, H/8, W/8] when this is OK.
  absl::Status encode_status = absl::UnimplementedError("encode_image");
  absl::StatusOr<CallResult<torch::Tensor>> encode_image(const ModelHandle&, const torch::Tensor& image,
                                                         const torch::Tensor&, const CancellationToken&) override {
    MutexLock lock(&mu_);
    if (!encode_status.ok()) return encode_status;
    return CallResult<torch::Tensor>{torch::zeros({1, 16, image.size(-2) / 8, image.size(-1) / 8}),
                                     std::exchange(next_report, {})};
  }
  bool draining() const override { return false; }

 private:
  void record(const ModelLoadRequest& request) {
    MutexLock lock(&mu_);
    last_path = request.path;
    last_model_id = request.model_id;
  }
  mutable Mutex mu_;
  mutable size_t next_stats_ = 0;
  mutable size_t next_vram_stats_ = 0;
};

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_FAKE_ENGINE_H_
