#include "core/memory/activation_arena_scope.h"

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <thread>

#include "core/util/bytes.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

// float32 elements in `bytes`.
int64_t floats(int64_t bytes) { return bytes / 4; }

TEST(ActivationArenaScope, LargeTensorsOfTheBoundThreadComeFromTheArena) {
  ActivationArenaScope scope(4 * kMiB);
  ASSERT_TRUE(scope.bound());
  torch::Tensor large = torch::full({floats(kMinArenaBytes)}, 1.5f);
  torch::Tensor small = torch::empty({floats(kMinArenaBytes) - 1});
  torch::Tensor elsewhere;
  std::thread([&] { elsewhere = torch::empty({floats(kMiB)}); }).join();
  ActivationArenaStats s = scope.stats();
  EXPECT_EQ(s.live_blocks, 1) << "only the large tensor of this thread";
  EXPECT_EQ(s.live_bytes, kMinArenaBytes);
  EXPECT_EQ(large.sum().item<float>(), 1.5f * static_cast<float>(floats(kMinArenaBytes)));
  large = torch::Tensor();
  EXPECT_EQ(scope.stats().live_blocks, 0);
}

TEST(ActivationArenaScope, ATensorThatOutlivesItsScopeKeepsItsArenaUntilFreed) {
  const int before = mapped_activation_arenas();
  torch::Tensor out;
  {
    ActivationArenaScope scope(4 * kMiB);
    EXPECT_EQ(mapped_activation_arenas(), before + 1);
    torch::Tensor scratch = torch::ones({floats(kMiB)});
    out = scratch * 2;  // the call's result
  }
  EXPECT_EQ(mapped_activation_arenas(), before + 1) << "the result still lives in it";
  EXPECT_EQ(out.sum().item<float>(), 2.0f * static_cast<float>(floats(kMiB)));
  out = torch::Tensor();
  EXPECT_EQ(mapped_activation_arenas(), before) << "unmapped with its last tensor";
  { ActivationArenaScope unused(4 * kMiB); }
  EXPECT_EQ(mapped_activation_arenas(), before) << "a scope that kept nothing unmaps at its end";
}

TEST(ActivationArenaScope, WhatTheArenaCannotFitComesFromTheHeap) {
  ActivationArenaScope scope(kMiB);
  torch::Tensor fits = torch::ones({floats(kMiB / 2)});
  torch::Tensor too_large = torch::ones({floats(kMiB)});
  EXPECT_EQ(too_large.sum().item<float>(), static_cast<float>(floats(kMiB)));
  const ActivationArenaStats s = scope.stats();
  EXPECT_EQ(s.live_blocks, 1);
  EXPECT_EQ(s.refusals, 1);
}

TEST(ActivationArenaScope, APauseAndAnEmptyScopeBindNothing) {
  ActivationArenaScope scope(4 * kMiB);
  {
    ActivationArenaPause pause;
    torch::Tensor weights = torch::empty({floats(kMiB)});
    EXPECT_EQ(scope.stats().live_blocks, 0);
  }
  ActivationArenaScope none(0);
  EXPECT_FALSE(none.bound());
  EXPECT_EQ(none.stats().capacity_bytes, 0);
}

TEST(ActivationArenaScope, AnInnerScopeBindsItsOwnArenaThenTheOuterOneAgain) {
  ActivationArenaScope outer(4 * kMiB);
  {
    ActivationArenaScope inner(4 * kMiB);
    torch::Tensor t = torch::empty({floats(kMiB)});
    EXPECT_EQ(inner.stats().live_blocks, 1);
    EXPECT_EQ(outer.stats().live_blocks, 0);
  }
  torch::Tensor t = torch::empty({floats(kMiB)});
  EXPECT_EQ(outer.stats().live_blocks, 1);
}

TEST(ActivationArenaScope, LibtorchsRawInterfaceWorksForBothKindsOfBlock) {
  ActivationArenaScope scope(4 * kMiB);
  c10::Allocator* cpu = c10::GetCPUAllocator();
  void* from_arena = cpu->raw_allocate(static_cast<size_t>(kMiB));
  void* from_heap = cpu->raw_allocate(64);
  EXPECT_EQ(scope.stats().live_blocks, 1);
  cpu->raw_deallocate(from_arena);
  cpu->raw_deallocate(from_heap);
  EXPECT_EQ(scope.stats().live_blocks, 0);
}

}  // namespace
}  // namespace diffusiond
