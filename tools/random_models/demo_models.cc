#include "tools/random_models/demo_models.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/denoise/denoise_loop.h"
#include "core/models/cosmos/cosmos_model.h"
#include "core/models/flux/flux_model.h"
#include "core/models/krea2/krea2_model.h"
#include "core/models/qwen25_vl/qwen25_vl_model.h"
#include "core/models/qwen3_vl/qwen3_vl_model.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/models/wan/wan_model.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/models/z_image/z_image_model.h"
#include "core/util/status_macros.h"
#include "tools/random_models/cosmos_random.h"
#include "tools/random_models/flux_random.h"
#include "tools/random_models/krea2_pipeline_random.h"
#include "tools/random_models/krea2_random.h"
#include "tools/random_models/qwen_image_pipeline_random.h"
#include "tools/random_models/qwen_image_random.h"
#include "tools/random_models/qwen_vl_random.h"
#include "tools/random_models/wan_random.h"
#include "tools/random_models/wan_vae_random.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {

std::vector<std::string> demo_architectures() {
  return {std::string(kZImageArchitecture), std::string(kFluxArchitecture), std::string(kQwenImageArchitecture),
          std::string(kKrea2Architecture), std::string(kWanArchitecture), std::string(kCosmosArchitecture)};
}

absl::Status write_demo_model(absl::string_view architecture, const std::string& folder, uint64_t seed) {
  if (architecture == kZImageArchitecture) return write_random_z_image(demo_z_image_config(), folder, seed);
  if (architecture == kFluxArchitecture) return write_random_flux(demo_flux_config(), folder, seed);
  if (architecture == kQwenImageArchitecture) return write_random_qwen_image(demo_qwen_image_config(), folder, seed);
  if (architecture == kKrea2Architecture) return write_random_krea2(demo_krea2_config(), folder, seed);
  if (architecture == kWanArchitecture) return write_random_wan(demo_wan_config(), folder, seed);
  if (architecture == kCosmosArchitecture) return write_random_cosmos(demo_cosmos_config(), folder, seed);
  return absl::InvalidArgumentError(absl::StrCat("no demo model for architecture \"", architecture,
                                                 "\"; there are: ", absl::StrJoin(demo_architectures(), ", ")));
}

absl::StatusOr<int64_t> write_mid_size_model(absl::string_view architecture, const std::string& folder,
                                             uint64_t seed) {
  if (architecture == kZImageArchitecture) {
    DIFFUSIOND_RETURN_IF_ERROR(write_random_z_image(mid_size_z_image_config(), folder, seed));
    return 128;
  }
  if (architecture == kFluxArchitecture) {
    DIFFUSIOND_RETURN_IF_ERROR(write_random_flux(mid_size_flux_config(), folder, seed));
    return 512;
  }
  if (architecture == kQwenImageArchitecture) {
    DIFFUSIOND_RETURN_IF_ERROR(write_random_qwen_image(mid_size_qwen_image_config(), folder, seed));
    return 128;
  }
  if (architecture == kKrea2Architecture) {
    DIFFUSIOND_RETURN_IF_ERROR(write_random_krea2(mid_size_krea2_config(), folder, seed));
    return 128;
  }
  if (architecture == kWanArchitecture) {
    DIFFUSIOND_RETURN_IF_ERROR(write_random_wan(mid_size_wan_config(), folder, seed));
    return kWanDefaultTextLength;
  }
  if (architecture == kCosmosArchitecture) {
    DIFFUSIOND_RETURN_IF_ERROR(write_random_cosmos(mid_size_cosmos_config(), folder, seed));
    return 512;  // the text conditioner's rows
  }
  return absl::InvalidArgumentError(absl::StrCat("no mid-size model for architecture \"", architecture, "\""));
}

std::vector<std::string> bench_component_architectures() {
  return {std::string(kQwen25VlArchitecture), std::string(kQwen3VlArchitecture),
          std::string(kQwenImageVaeArchitecture)};
}

absl::Status write_demo_component(absl::string_view architecture, const std::string& folder, uint64_t seed) {
  if (architecture == kQwen25VlArchitecture) {
    return write_random_qwen25_vl(demo_qwen_image_pipeline_sizes().text_encoder, folder, seed);
  }
  if (architecture == kQwen3VlArchitecture) {
    return write_random_qwen3_vl(demo_krea2_pipeline_sizes().text_encoder, folder, seed);
  }
  if (architecture == kQwenImageVaeArchitecture) {
    return write_random_wan_vae(demo_qwen_image_vae_config(), folder, seed);
  }
  return absl::InvalidArgumentError(absl::StrCat("no demo component for architecture \"", architecture,
                                                 "\"; there are: ",
                                                 absl::StrJoin(bench_component_architectures(), ", ")));
}

absl::Status write_mid_size_component(absl::string_view architecture, const std::string& folder, uint64_t seed) {
  if (architecture == kQwen25VlArchitecture) return write_random_qwen25_vl(mid_size_qwen25_vl_config(), folder, seed);
  if (architecture == kQwen3VlArchitecture) return write_random_qwen3_vl(mid_size_qwen3_vl_config(), folder, seed);
  if (architecture == kQwenImageVaeArchitecture) return write_random_wan_vae(qwen_image_vae_config(), folder, seed);
  return absl::InvalidArgumentError(absl::StrCat("no mid-size component for architecture \"", architecture,
                                                 "\"; there are: ",
                                                 absl::StrJoin(bench_component_architectures(), ", ")));
}

std::vector<int64_t> demo_latent_shape(const LatentLayout& layout, int64_t side, int64_t frames) {
  if (layout.max_frames <= 0) return {layout.channels, side, side};
  return {layout.channels, std::clamp<int64_t>(frames, 1, layout.max_frames), side, side};
}

Conditioning random_conditioning(const std::vector<ConditioningInput>& inputs, int64_t tokens, uint64_t seed) {
  Conditioning c;
  for (const ConditioningInput& in : inputs) {
    if (in.kind == ConditioningInput::Kind::kScalar) {
      c.scalars[in.name] = in.default_value;
      continue;
    }
    // A random mask would drop random tokens; without one every token counts.
    if (!in.required) continue;
    std::vector<int64_t> shape = in.shape;
    for (int64_t& d : shape) d = d < 0 ? tokens : d;
    c.tensors[in.name] = seeded_noise(shape, seed++);
  }
  return c;
}

absl::Status write_float32_tensors(const std::string& path, const NamedTensors& named) {
  std::vector<TensorSpec> specs;
  std::vector<torch::Tensor> tensors;
  for (const auto& [name, tensor] : named) {
    tensors.push_back(tensor.to(torch::kFloat32).contiguous());
    specs.push_back({name, DType::kF32, tensors.back().sizes().vec()});
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWriter> writer, SafetensorsWriter::create(path, specs));
  for (const torch::Tensor& t : tensors) {
    DIFFUSIOND_RETURN_IF_ERROR(writer->append(t.data_ptr(), static_cast<int64_t>(t.nbytes())));
  }
  return writer->close();
}

}  // namespace diffusiond
