#include "tools/random_models/random_weights.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::Status write_random_weights(const std::string& path, const std::vector<ParamSpec>& table, uint64_t seed,
                                  const torch::Device& device) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return absl::UnavailableError(absl::StrCat(path, ": ", ec.message()));
  std::vector<TensorSpec> specs;
  for (const ParamSpec& p : table) specs.push_back({p.name, DType::kBF16, p.shape});
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWriter> writer,
                              SafetensorsWriter::create(path, specs, {{"format", "pt"}}));
  at::Generator gen = at::detail::createCPUGenerator(seed);
  if (!device.is_cpu()) torch::manual_seed(seed);  // every device's default generator
  for (const ParamSpec& p : table) {
    torch::Tensor t = device.is_cpu() ? torch::randn(p.shape, gen, torch::kFloat32)
                                      : torch::randn(p.shape, torch::TensorOptions().device(device));
    switch (p.kind) {
      case ParamKind::kLayerWeight: {
        const double fan_in = static_cast<double>(p.shape.back());
        t.mul_(std::clamp(0.6 / std::sqrt(fan_in), 0.02, 0.1));
        break;
      }
      case ParamKind::kBias: t.mul_(0.05); break;
      case ParamKind::kNormWeight: t.mul_(0.15).add_(1.0); break;
      case ParamKind::kBare: t.mul_(0.5); break;
    }
    const torch::Tensor bf16 = t.to(torch::kBFloat16).to(torch::kCPU).contiguous();
    DIFFUSIOND_RETURN_IF_ERROR(writer->append(bf16.data_ptr(), static_cast<int64_t>(bf16.nbytes())));
  }
  return writer->close();
}

absl::Status write_text_file(const std::string& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return absl::UnavailableError(absl::StrCat(path, ": ", ec.message()));
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace diffusiond
