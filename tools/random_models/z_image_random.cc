#include "tools/random_models/z_image_random.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/models/z_image/z_image_params.h"
#include "core/util/status_macros.h"

namespace diffusiond {

ZImageConfig demo_z_image_config() {
  ZImageConfig c;
  c.dim = 256;
  c.n_heads = 4;  // head_dim 64 = 16 + 24 + 24
  c.axes_dims = {16, 24, 24};
  c.n_layers = 4;
  c.n_refiner_layers = 2;
  c.cap_feat_dim = 128;
  return c;
}

ZImageConfig mid_size_z_image_config() {
  ZImageConfig c;
  c.dim = 1536;
  c.n_heads = 12;
  c.n_layers = 8;
  c.n_refiner_layers = 2;
  return c;
}

std::string z_image_config_json(const ZImageConfig& c) {
  nlohmann::ordered_json j;
  j["_class_name"] = "ZImageTransformer2DModel";
  j["all_f_patch_size"] = {c.f_patch_size};
  j["all_patch_size"] = {c.patch_size};
  j["axes_dims"] = c.axes_dims;
  j["axes_lens"] = c.axes_lens;
  j["cap_feat_dim"] = c.cap_feat_dim;
  j["dim"] = c.dim;
  j["in_channels"] = c.in_channels;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_heads;
  j["n_layers"] = c.n_layers;
  j["n_refiner_layers"] = c.n_refiner_layers;
  j["norm_eps"] = c.norm_eps;
  j["qk_norm"] = c.qk_norm;
  j["rope_theta"] = c.rope_theta;
  j["siglip_feat_dim"] = nullptr;
  j["t_scale"] = c.t_scale;
  return j.dump(2);
}

absl::Status write_random_z_image(const ZImageConfig& config, absl::string_view folder, uint64_t seed) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  std::error_code ec;
  const std::filesystem::path dir{std::string(folder)};
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(folder, ": ", ec.message()));
  {
    std::ofstream out(dir / "config.json");
    out << z_image_config_json(config) << "\n";
    if (!out) return absl::UnavailableError(absl::StrCat(folder, "/config.json: write failed"));
  }
  const std::vector<ParamSpec> table = z_image_parameter_table(config);
  std::vector<TensorSpec> specs;
  for (const ParamSpec& p : table) specs.push_back({p.name, DType::kBF16, p.shape});
  DIFFUSIOND_ASSIGN_OR_RETURN(
      std::unique_ptr<SafetensorsWriter> writer,
      SafetensorsWriter::create((dir / "diffusion_pytorch_model.safetensors").string(), specs,
                                {{"format", "pt"}}));
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (const ParamSpec& p : table) {
    torch::Tensor t = torch::randn(p.shape, gen, torch::kFloat32);
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
    const torch::Tensor bf16 = t.to(torch::kBFloat16).contiguous();
    DIFFUSIOND_RETURN_IF_ERROR(writer->append(bf16.data_ptr(), static_cast<int64_t>(bf16.nbytes())));
  }
  return writer->close();
}

}  // namespace diffusiond
