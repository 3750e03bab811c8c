// Writing a ComfyUI "scaled fp8" copy of a checkpoint, for tests of models
// whose reference fixtures hold none (Wan, Qwen-Image): the chosen layer
// weights become e4m3fn codes of w / s with s = max|w| / 448 (the format's
// largest finite value, as ComfyUI's converters choose it) and a float32
// "<layer>.scale_weight" beside each, plus the "scaled_fp8" marker. The same
// weights dequantised (code × s, float32) go to a second file, the exact
// model a loader that applies the scales must reproduce.
#ifndef DIFFUSIOND_TESTS_TESTING_SCALED_FP8_FILE_H_
#define DIFFUSIOND_TESTS_TESTING_SCALED_FP8_FILE_H_

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/precision/torch_dtype.h"
#include "gtest/gtest.h"
#include "kernels/fp8_codec.h"

namespace diffusiond::testing {

struct ScaledFp8Copy {
  std::string scaled;       // the scaled-fp8 file
  std::string dequantized;  // the same weights as float32 code × scale
  int quantized = 0;        // how many weights became FP8
};

// Copies `from` to `scaled_path` and `dequantized_path`, each name prefixed
// with `prefix`; the tensors `quantize` picks (by their name in `from`)
// become scaled FP8. Fails the test on error.
inline ScaledFp8Copy write_scaled_fp8_copy(const std::string& from, const std::string& scaled_path,
                                           const std::string& dequantized_path, const std::string& prefix,
                                           const std::function<bool(const TensorRecord&)>& quantize) {
  ScaledFp8Copy out{scaled_path, dequantized_path, 0};
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(from);
  EXPECT_TRUE(src.ok()) << src.status();
  if (!src.ok()) return out;
  struct Entry {
    std::string name;
    torch::Tensor scaled_bytes, dequantized_bytes;  // uint8 views of each file's data
    DType scaled_dtype, dequantized_dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Entry> entries;
  auto bytes_of = [](const torch::Tensor& t) { return t.contiguous().view({-1}).view(torch::kUInt8); };
  for (const TensorRecord& t : (*src)->tensors()) {
    torch::Tensor value = torch::empty(t.shape, torch::TensorOptions().dtype(storage_scalar_type(t.dtype)));
    EXPECT_TRUE((*src)->read(t, static_cast<char*>(value.data_ptr())).ok());
    if (!quantize(t)) {
      entries.push_back({prefix + t.name, bytes_of(value), bytes_of(value), t.dtype, t.dtype, t.shape});
      continue;
    }
    const torch::Tensor wide = value.to(torch::kFloat32).contiguous();
    const float scale = std::max(wide.abs().max().item<float>(), 1e-12f) / 448.0f;
    torch::Tensor codes = torch::empty(t.shape, torch::kUInt8);
    EXPECT_TRUE(fp8_encode(wide, Fp8Format::kE4M3Fn, 1.0f / scale, codes).ok());
    torch::Tensor dequantized = torch::empty(t.shape, torch::kFloat32);
    EXPECT_TRUE(fp8_decode(codes, Fp8Format::kE4M3Fn, scale, dequantized).ok());
    entries.push_back({prefix + t.name, codes, bytes_of(dequantized), DType::kF8E4M3, DType::kF32, t.shape});
    std::string layer = t.name.substr(0, t.name.size() - std::string(".weight").size());
    const torch::Tensor s = torch::full({1}, scale, torch::kFloat32);
    entries.push_back({prefix + layer + ".scale_weight", bytes_of(s), torch::Tensor(), DType::kF32, DType::kF32, {1}});
    ++out.quantized;
  }
  auto write = [&entries](const std::string& path, bool scaled) {
    std::vector<TensorSpec> specs;
    for (const Entry& e : entries) {
      if (!scaled && !e.dequantized_bytes.defined()) continue;
      specs.push_back({e.name, scaled ? e.scaled_dtype : e.dequantized_dtype, e.shape});
    }
    if (scaled) specs.push_back({"scaled_fp8", DType::kF8E4M3, {0}});
    absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create(path, specs);
    ASSERT_TRUE(w.ok()) << w.status();
    for (const Entry& e : entries) {
      const torch::Tensor& b = scaled ? e.scaled_bytes : e.dequantized_bytes;
      if (!b.defined()) continue;
      ASSERT_TRUE((*w)->append(b.data_ptr(), b.numel()).ok());
    }
    ASSERT_TRUE((*w)->close().ok());
  };
  write(scaled_path, true);
  write(dequantized_path, false);
  return out;
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_SCALED_FP8_FILE_H_
