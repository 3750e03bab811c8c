// FP8 encode/decode throughput against memcpy of the same bytes, on all
// cores (the codec uses at::parallel_for). bytes_per_second counts the wide
// (bf16/f32) side, which is what a load or forward moves.
#include <cstring>
#include <random>
#include <vector>

#include <ATen/Parallel.h>

#include "benchmark/benchmark.h"
#include "kernels/fp8_cpu.h"

namespace diffusiond {
namespace {

constexpr int64_t kElements = 32 << 20;  // 64 MiB of bf16, 128 MiB of f32

std::vector<uint16_t> bf16_source() {
  std::vector<uint16_t> v(kElements);
  std::mt19937 rng(1);
  for (uint16_t& x : v) x = static_cast<uint16_t>(0x3B80 + (rng() & 0x3FF));
  return v;
}

void BM_MemcpyBf16Bytes(benchmark::State& state) {
  std::vector<uint16_t> src = bf16_source(), dst(kElements);
  for (auto _ : state) {
    at::parallel_for(0, kElements, 1 << 16, [&](int64_t b, int64_t e) {
      std::memcpy(dst.data() + b, src.data() + b, (e - b) * 2);
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 2);
}
BENCHMARK(BM_MemcpyBf16Bytes)->UseRealTime();

void BM_EncodeBf16ToE4M3(benchmark::State& state) {
  std::vector<uint16_t> src = bf16_source();
  std::vector<uint8_t> codes(kElements);
  for (auto _ : state) {
    fp8_encode_cpu(src.data(), FloatKind::kBF16, kElements, Fp8Format::kE4M3Fn, 1.0f, codes.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 2);
}
BENCHMARK(BM_EncodeBf16ToE4M3)->UseRealTime();

void BM_DecodeE4M3ToBf16(benchmark::State& state) {
  std::vector<uint8_t> codes(kElements);
  for (int64_t i = 0; i < kElements; ++i) codes[i] = static_cast<uint8_t>(i * 37);
  std::vector<uint16_t> dst(kElements);
  for (auto _ : state) {
    fp8_decode_cpu(codes.data(), kElements, Fp8Format::kE4M3Fn, 1.0f, FloatKind::kBF16, dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 2);
}
BENCHMARK(BM_DecodeE4M3ToBf16)->UseRealTime();

void BM_MemcpyF32Bytes(benchmark::State& state) {
  std::vector<float> src(kElements, 1.0f), dst(kElements);
  for (auto _ : state) {
    at::parallel_for(0, kElements, 1 << 16, [&](int64_t b, int64_t e) {
      std::memcpy(dst.data() + b, src.data() + b, (e - b) * 4);
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 4);
}
BENCHMARK(BM_MemcpyF32Bytes)->UseRealTime();

void BM_DecodeE4M3ToF32(benchmark::State& state) {
  std::vector<uint8_t> codes(kElements);
  for (int64_t i = 0; i < kElements; ++i) codes[i] = static_cast<uint8_t>(i * 37);
  std::vector<float> dst(kElements);
  for (auto _ : state) {
    fp8_decode_cpu(codes.data(), kElements, Fp8Format::kE4M3Fn, 0.5f, FloatKind::kF32, dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 4);
}
BENCHMARK(BM_DecodeE4M3ToF32)->UseRealTime();

void BM_EncodeF32ToE4M3(benchmark::State& state) {
  std::vector<float> src(kElements);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : src) x = normal(rng);
  std::vector<uint8_t> codes(kElements);
  for (auto _ : state) {
    fp8_encode_cpu(src.data(), FloatKind::kF32, kElements, Fp8Format::kE4M3Fn, 2.0f, codes.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 4);
}
BENCHMARK(BM_EncodeF32ToE4M3)->UseRealTime();

}  // namespace
}  // namespace diffusiond
