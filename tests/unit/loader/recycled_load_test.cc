// A model switch through the cache: the load that evicts a model writes its
// weights over the evicted model's memory (core/memory/recycled_pages.h),
// every byte of them, and never holds more than its reservation.
#include <string>
#include <vector>

#include "core/engine/model_admission.h"
#include "core/memory/recycled_pages.h"
#include "gtest/gtest.h"
#include "tests/testing/checkpoint_builder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::filled_tensor;
using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TestTensor;
using ::diffusiond::testing::write_safetensors;

// bf16 tensors of `rows` x 1024 (2 KiB a row), all mapped weights (1 MiB
// or more); tensor i is filled with the byte fill + i.
std::vector<TestTensor> tensors(const std::vector<int64_t>& rows, char fill) {
  std::vector<TestTensor> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    out.push_back(filled_tensor("blocks." + std::to_string(i) + ".weight", DType::kBF16, {rows[i], 1024},
                                static_cast<char>(fill + i)));
  }
  return out;
}

class RecycledLoad : public ::testing::Test {
 protected:
  std::unique_ptr<Checkpoint> write_and_open(const std::string& name, const std::vector<TestTensor>& t) {
    write_safetensors(dir_.path(name), t);
    absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(dir_.path(name));
    EXPECT_THAT(c, IsOk());
    return std::move(*c);
  }

  // Straight reads at bf16, so a tensor's bytes read are its bytes charged.
  static LoadPlan plan(const Checkpoint& c) {
    PlanOptions options;
    options.compute_dtype = torch::kBFloat16;
    absl::StatusOr<LoadPlan> p = plan_load(c, options);
    EXPECT_THAT(p, IsOk());
    return std::move(*p);
  }

  void make_cache(int64_t budget_bytes) {
    ram_ = std::make_unique<Budget>(Device::kCpu, budget_bytes);
    ModelCacheOptions options;
    options.ram_budget = ram_.get();
    cache_ = *ModelCache::create(options);
  }

  // Loads `c` as `key` and returns the reused bytes the last progress
  // event reported, checking on every event that the recycled pages and
  // the weights loaded so far fit the reservation.
  absl::StatusOr<Pin> load(const std::string& key, const Checkpoint& c, const LoadPlan& p, int64_t* reused) {
    StreamOptions stream;
    stream.on_progress = [&](const LoadProgress& progress) {
      *reused = progress.reused_bytes;
      const RecycledPages* recycled = RecycledPages::current();
      ASSERT_NE(recycled, nullptr);  // the loading thread's, during a load
      EXPECT_LE(recycled->bytes() + progress.bytes_read, p.reservation_bytes())
          << "after " << progress.tensors_done << " tensors";
    };
    return cache_->get_or_load(key, [&] { return load_weights(c, p, *cache_, stream); });
  }

  static void expect_contents(const Pin& pin, const std::vector<TestTensor>& want) {
    const WeightStore& store = pin.as<CachedWeights>()->store();
    for (const TestTensor& t : want) {
      absl::StatusOr<torch::Tensor> got = store.materialize(t.spec.name, torch::kBFloat16);
      ASSERT_THAT(got, IsOk());
      ASSERT_EQ(static_cast<int64_t>(got->nbytes()), static_cast<int64_t>(t.bytes.size()));
      EXPECT_EQ(std::string(static_cast<const char*>(got->data_ptr()), got->nbytes()), t.bytes) << t.spec.name;
    }
  }

  TempDir dir_;
  std::unique_ptr<Budget> ram_;
  std::unique_ptr<ModelCache> cache_;
};

TEST_F(RecycledLoad, ASwitchWritesOverEveryPageOfTheModelItEvicts) {
  const std::vector<TestTensor> a = tensors({1024, 1024, 1024, 1024}, 1);  // 2 MiB each
  std::unique_ptr<Checkpoint> c = write_and_open("a.safetensors", a);
  const LoadPlan p = plan(*c);
  make_cache(p.reservation_bytes() * 3 / 2);  // room for one copy
  int64_t reused = -1;
  ASSERT_THAT(load("first", *c, p, &reused), IsOk());
  EXPECT_EQ(reused, 0);  // nothing was evicted for it
  absl::StatusOr<Pin> second = load("second", *c, p, &reused);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(cache_->stats().evictions, 1);
  EXPECT_EQ(reused, p.final_bytes);  // every weight in the first copy's pages
  expect_contents(*second, a);
  EXPECT_EQ(ram_->snapshot().committed_bytes, p.final_bytes);
  EXPECT_EQ(ram_->snapshot().reserved_bytes, 0);
  EXPECT_EQ(RecycledPages::current(), nullptr);  // nothing held between loads
}

TEST_F(RecycledLoad, ASwitchToOtherShapesReusesWhatFitsWithinItsReservation) {
  const std::vector<TestTensor> a = tensors({1024, 1024, 1024, 1024}, 1);
  const std::vector<TestTensor> b = tensors({1536, 512, 1024, 1280, 640}, 40);
  std::unique_ptr<Checkpoint> ca = write_and_open("a.safetensors", a), cb = write_and_open("b.safetensors", b);
  const LoadPlan pa = plan(*ca), pb = plan(*cb);
  make_cache(pb.reservation_bytes() * 3 / 2);
  ASSERT_GT(pa.reservation_bytes() + pb.reservation_bytes(), ram_->capacity_bytes());
  int64_t reused = -1;
  ASSERT_THAT(load("a", *ca, pa, &reused), IsOk());
  absl::StatusOr<Pin> loaded = load("b", *cb, pb, &reused);
  ASSERT_THAT(loaded, IsOk());
  EXPECT_EQ(cache_->stats().evictions, 1);
  // The 3 MiB weight finds no mapping long enough, so it is mapped fresh and
  // as much of a's memory is unmapped; the 1 MiB and 2 MiB ones take a's.
  EXPECT_GT(reused, 0);
  EXPECT_LE(reused, pa.final_bytes);
  expect_contents(*loaded, b);
  EXPECT_EQ(ram_->snapshot().committed_bytes, pb.final_bytes);
}

}  // namespace
}  // namespace diffusiond
