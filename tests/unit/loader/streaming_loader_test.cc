#include "core/loader/streaming_loader.h"

#include <cstring>
#include <random>

#include <c10/util/BFloat16.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "core/engine/model_admission.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/faulty_file.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::failing_device_from;
using ::diffusiond::testing::fixtures_dir;
using ::diffusiond::testing::io_error_at;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::ReadFault;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TestTensor;
using ::diffusiond::testing::write_safetensors;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A bf16 tensor of random normal values, kept as floats for checking.
TestTensor bf16_tensor(const std::string& name, std::vector<int64_t> shape, std::mt19937* rng,
                       std::vector<float>* values) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::string bytes(2 * n, '\0');
  values->resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const c10::BFloat16 b(normal(*rng));
    (*values)[i] = static_cast<float>(b);
    std::memcpy(&bytes[2 * i], &b.x, 2);
  }
  return TestTensor{TensorSpec{name, DType::kBF16, std::move(shape)}, std::move(bytes)};
}

class StreamingLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(7);
    tensors_ = {bf16_tensor("blocks.0.w1.weight", {96, 64}, &rng, &w1_),
                bf16_tensor("blocks.0.w1.bias", {96}, &rng, &bias_),
                bf16_tensor("blocks.1.w1.weight", {64, 96}, &rng, &w2_)};
    write_safetensors(dir_.path("m.safetensors"), tensors_);
  }

  std::unique_ptr<ModelCache> make_cache(Budget* ram) {
    ModelCacheOptions options;
    options.ram_budget = ram;
    absl::StatusOr<std::unique_ptr<ModelCache>> cache = ModelCache::create(options);
    EXPECT_THAT(cache, IsOk());
    return std::move(*cache);
  }

  std::unique_ptr<Checkpoint> open(std::vector<ReadFault> faults = {}) {
    OpenOptions options;
    if (!faults.empty()) options.opener = faulty_opener(std::move(faults));
    absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir_.path("m.safetensors"), options);
    EXPECT_THAT(c, IsOk());
    return std::move(*c);
  }

  LoadPlan plan(const Checkpoint& c, bool fp8, int64_t chunk = 16 * kMiB) {
    PlanOptions options;
    if (fp8) options.fp8.format = Fp8Format::kE4M3Fn;
    options.staging_chunk_bytes = chunk;
    absl::StatusOr<LoadPlan> p = plan_load(c, options);
    EXPECT_THAT(p, IsOk());
    return std::move(*p);
  }

  TempDir dir_;
  std::vector<TestTensor> tensors_;
  std::vector<float> w1_, bias_, w2_;
};

TEST_F(StreamingLoaderTest, Fp8LoadMatchesTheReferenceCodecAndAccountsExactly) {
  std::unique_ptr<Checkpoint> c = open();
  // A small chunk forces several chunks per tensor.
  const LoadPlan p = plan(*c, /*fp8=*/true, /*chunk=*/1000);
  Budget ram(Device::kCpu, p.reservation_bytes());  // exactly enough
  std::unique_ptr<ModelCache> cache = make_cache(&ram);
  absl::StatusOr<Pin> pin = cache->get_or_load("m", [&] { return load_weights(*c, p, *cache); });
  ASSERT_THAT(pin, IsOk());
  const WeightStore* store = &pin->as<CachedWeights>()->store();
  EXPECT_EQ(store->fp8_count(), 2);
  EXPECT_EQ(store->nbytes(), 96 * 64 + 96 * 4 + 64 * 96);
  EXPECT_EQ(ram.snapshot().committed_bytes, store->nbytes());
  EXPECT_EQ(ram.snapshot().reserved_bytes, 0);
  EXPECT_EQ(store->compute_dtype(), torch::kFloat32);

  const Fp8Weight* w = store->fp8("blocks.1.w1.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->scale, 1.0f);
  const uint8_t* codes = w->codes.data_ptr<uint8_t>();
  for (size_t i = 0; i < w2_.size(); ++i) {
    ASSERT_EQ(codes[i], fp8_encode_ref(w2_[i], Fp8Format::kE4M3Fn)) << i;
  }
  absl::StatusOr<torch::Tensor> bias = store->at_compute_dtype("blocks.0.w1.bias");
  ASSERT_THAT(bias, IsOk());
  EXPECT_EQ(bias->scalar_type(), torch::kFloat32);
  for (size_t i = 0; i < bias_.size(); ++i) ASSERT_EQ(bias->data_ptr<float>()[i], bias_[i]);
}

TEST_F(StreamingLoaderTest, PerTensorMaxScalingUsesTheFullRange) {
  std::unique_ptr<Checkpoint> c = open();
  PlanOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  options.fp8.scaling = Fp8Scaling::kPerTensorMax;
  absl::StatusOr<LoadPlan> p = plan_load(*c, options);
  ASSERT_THAT(p, IsOk());
  Budget ram(Device::kCpu, p->reservation_bytes());
  std::unique_ptr<ModelCache> cache = make_cache(&ram);
  absl::StatusOr<Pin> pin = cache->get_or_load("m", [&] { return load_weights(*c, *p, *cache); });
  ASSERT_THAT(pin, IsOk());
  const Fp8Weight* w = pin->as<CachedWeights>()->store().fp8("blocks.0.w1.weight");
  float max_abs = 0;
  for (float v : w1_) max_abs = std::max(max_abs, std::fabs(v));
  EXPECT_FLOAT_EQ(w->scale, max_abs / 448.0f);
  absl::StatusOr<torch::Tensor> decoded = w->decode(torch::kFloat32);
  ASSERT_THAT(decoded, IsOk());
  for (size_t i = 0; i < w1_.size(); ++i) {
    ASSERT_NEAR(decoded->data_ptr<float>()[i], w1_[i], std::fabs(w1_[i]) / 16 + 1e-6) << i;
  }
}

TEST_F(StreamingLoaderTest, TooSmallABudgetIsRefusedBeforeReading) {
  // Any data read would fail, with UNAVAILABLE rather than the refusal.
  std::unique_ptr<Checkpoint> c = open({failing_device_from(open()->tensors().front().file_offset, EIO)});
  const LoadPlan p = plan(*c, true);
  Budget ram(Device::kCpu, p.reservation_bytes() - 1);
  std::unique_ptr<ModelCache> cache = make_cache(&ram);
  EXPECT_THAT(cache->get_or_load("m", [&] { return load_weights(*c, p, *cache); }),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("needed")));
  EXPECT_EQ(ram.snapshot().reserved_bytes, 0);
}

TEST_F(StreamingLoaderTest, IoErrorMidLoadReleasesEverything) {
  // An EIO halfway into each tensor in turn: the first chunks of that
  // tensor (and every tensor before it) have landed when it strikes.
  const std::vector<TensorRecord> records = open()->tensors();
  for (const TensorRecord& t : records) {
    const int64_t bad = t.file_offset + t.nbytes / 2;
    std::unique_ptr<Checkpoint> c = open({io_error_at(bad, bad + 1)});
    const LoadPlan p = plan(*c, true, 1000);
    Budget ram(Device::kCpu, 1 << 20);
    std::unique_ptr<ModelCache> cache = make_cache(&ram);
    EXPECT_THAT(cache->get_or_load("m", [&] { return load_weights(*c, p, *cache); }),
                StatusIs(absl::StatusCode::kUnavailable,
                         AllOf(HasSubstr("m.safetensors: read at offset " + std::to_string(bad)),
                               HasSubstr("Input/output error"), HasSubstr("tensor '" + t.name + "'"))));
    EXPECT_EQ(ram.snapshot().reserved_bytes, 0) << t.name;
    EXPECT_EQ(ram.snapshot().committed_bytes, 0) << t.name;
    EXPECT_TRUE(cache->stats().entries.empty());
  }
}

TEST_F(StreamingLoaderTest, CancellationBetweenTensorsReleasesEverything) {
  std::unique_ptr<Checkpoint> c = open();
  const LoadPlan p = plan(*c, false);
  Budget ram(Device::kCpu, 1 << 20);
  std::unique_ptr<ModelCache> cache = make_cache(&ram);
  CancellationSource cancel;
  StreamOptions options;
  options.cancel = cancel.token();
  std::vector<int64_t> seen;
  options.on_progress = [&](const LoadProgress& progress) {
    seen.push_back(progress.tensors_done);
    if (progress.tensors_done == 2) cancel.cancel();
  };
  EXPECT_THAT(cache->get_or_load("m", [&] { return load_weights(*c, p, *cache, options); }),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("after 2 of 3 tensors")));
  EXPECT_THAT(seen, ::testing::ElementsAre(1, 2));
  EXPECT_EQ(ram.snapshot().reserved_bytes, 0);
  EXPECT_EQ(ram.snapshot().committed_bytes, 0);
}

TEST(ScaledFp8Fixture, WeightsKeepCodesAndApplyTheirScale) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> c =
      Checkpoint::open(fixtures_dir() + "/zimage-tiny/single_file_scaled_fp8.safetensors");
  ASSERT_THAT(c, IsOk());
  absl::StatusOr<LoadPlan> p = plan_load(**c, {});  // FP8 storage off: file FP8 stays FP8
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->fp8_tensors(), 37);
  Budget ram(Device::kCpu, 64 << 20);
  ModelCacheOptions options;
  options.ram_budget = &ram;
  absl::StatusOr<std::unique_ptr<ModelCache>> cache = ModelCache::create(options);
  ASSERT_THAT(cache, IsOk());
  absl::StatusOr<Pin> pin =
      (*cache)->get_or_load("f", [&] { return load_weights(**c, *p, **cache); });
  ASSERT_THAT(pin, IsOk());
  const WeightStore* store = &pin->as<CachedWeights>()->store();

  const std::string name = "layers.1.feed_forward.w2.weight";
  const TensorRecord* codes_record = (*c)->find(name);
  const TensorRecord* scale_record = (*c)->find("layers.1.feed_forward.w2.scale_weight");
  ASSERT_NE(codes_record, nullptr);
  ASSERT_NE(scale_record, nullptr);
  std::string codes(codes_record->nbytes, '\0');
  float scale = 0;
  ASSERT_THAT((*c)->read(*codes_record, codes.data()), IsOk());
  ASSERT_THAT((*c)->read(*scale_record, reinterpret_cast<char*>(&scale)), IsOk());
  ASSERT_NE(scale, 1.0f);
  const Fp8Weight* w = store->fp8(name);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->scale, scale);
  absl::StatusOr<torch::Tensor> decoded = store->at_compute_dtype(name);
  ASSERT_THAT(decoded, IsOk());
  for (size_t i = 0; i < codes.size(); ++i) {
    ASSERT_EQ(decoded->data_ptr<float>()[i],
              fp8_decode_ref(static_cast<uint8_t>(codes[i]), Fp8Format::kE4M3Fn) * scale)
        << i;
  }
  EXPECT_FALSE(store->contains("layers.1.feed_forward.w2.scale_weight"));
  EXPECT_FALSE(store->contains("scaled_fp8"));
}

}  // namespace
}  // namespace diffusiond
