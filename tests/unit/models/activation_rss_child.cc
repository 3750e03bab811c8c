// Child process for activation_rss_test: one Denoise step (the model's
// predictor and the loop, as Engine::denoise runs it) or one Step (a named-
// input forward) of a demo model's architecture and size
// (tools/random_models: Z-Image, FLUX, Qwen-Image, Krea 2 or Wan; random
// weights made in memory, stored at the compute dtype) on a latent of side
// x side, of batch 1 or 2 (a Denoise: guided), with 64 text tokens, after a
// warm-up call on a 16 x 16 latent and a purge of the heap, under the
// daemon's allocator (core/memory/allocator.h). Prints "peak_rss_delta_bytes=<n>",
// "estimate_bytes=<n>" and "breakdown=<text>"
// (DiffusionModel::estimate_activations).
//
// Usage: activation_rss_child z-image|flux|qwen-image|krea2|wan|cosmos side batch [denoise|step]
//            [float32|bfloat16]
#include <torch/utils.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/denoise/denoise_loop.h"
#include "core/memory/allocator.h"
#include "core/memory/process_memory.h"
#include "core/models/cosmos/cosmos_model.h"
#include "core/models/cosmos/cosmos_params.h"
#include "core/models/flux/flux_model.h"
#include "core/models/flux/flux_params.h"
#include "core/models/krea2/krea2_model.h"
#include "core/models/krea2/krea2_params.h"
#include "core/models/krea2/krea2_rope.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/models/qwen_image/qwen_image_params.h"
#include "core/models/wan/wan_model.h"
#include "core/models/wan/wan_params.h"
#include "core/models/z_image/z_image_model.h"
#include "core/models/z_image/z_image_params.h"
#include "core/precision/torch_dtype.h"
#include "tools/random_models/cosmos_random.h"
#include "tools/random_models/flux_random.h"
#include "tools/random_models/krea2_random.h"
#include "tools/random_models/qwen_image_random.h"
#include "tools/random_models/wan_random.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

constexpr int64_t kTextTokens = 64;

std::unique_ptr<WeightStore> random_store(const std::vector<ParamSpec>& table, torch::ScalarType dtype) {
  auto weights = std::make_unique<WeightStore>(dtype);
  for (const ParamSpec& p : table) weights->add(p.name, (torch::randn(p.shape) * 0.05).to(dtype));
  return weights;
}

std::unique_ptr<DiffusionModel> make_model(const std::string& arch, torch::ScalarType dtype) {
  if (arch == "qwen-image") {
    const QwenImageConfig c = demo_qwen_image_config();
    absl::StatusOr<std::unique_ptr<QwenImageModel>> m =
        QwenImageModel::create(c, random_store(qwen_image_parameter_table(c), dtype));
    return m.ok() ? std::move(*m) : nullptr;
  }
  if (arch == "krea2") {
    const Krea2Config c = demo_krea2_config();
    absl::StatusOr<std::unique_ptr<Krea2Model>> m =
        Krea2Model::create(c, random_store(krea2_parameter_table(c), dtype));
    return m.ok() ? std::move(*m) : nullptr;
  }
  if (arch == "wan") {
    const WanConfig c = demo_wan_config();
    absl::StatusOr<std::unique_ptr<WanModel>> m = WanModel::create(c, random_store(wan_parameter_table(c), dtype));
    return m.ok() ? std::move(*m) : nullptr;
  }
  if (arch == "cosmos") {
    const CosmosConfig c = demo_cosmos_config();
    absl::StatusOr<std::unique_ptr<CosmosModel>> m =
        CosmosModel::create(c, random_store(cosmos_parameter_table(c), dtype));
    return m.ok() ? std::move(*m) : nullptr;
  }
  if (arch == "flux") {
    const FluxConfig c = demo_flux_config();
    absl::StatusOr<std::unique_ptr<FluxModel>> m = FluxModel::create(c, random_store(flux_parameter_table(c), dtype));
    return m.ok() ? std::move(*m) : nullptr;
  }
  const ZImageConfig c = demo_z_image_config();
  absl::StatusOr<std::unique_ptr<ZImageModel>> m =
      ZImageModel::create(c, random_store(z_image_parameter_table(c), dtype));
  return m.ok() ? std::move(*m) : nullptr;
}

// Random conditioning of every tensor input the model declares, with
// kTextTokens rows where the length is free.
Conditioning random_conditioning(const DiffusionModel& model) {
  Conditioning c;
  for (const ConditioningInput& in : model.conditioning_inputs()) {
    if (in.kind != ConditioningInput::Kind::kTensor) continue;
    std::vector<int64_t> shape = in.shape;
    for (int64_t& d : shape) d = d < 0 ? kTextTokens : d;
    c.tensors[in.name] = torch::randn(shape);
  }
  return c;
}

// A Step's named inputs (docs/api.md) for `batch` latents of side x side.
NamedTensors step_inputs(const DiffusionModel& model, int64_t side, int64_t batch) {
  const int64_t channels = model.latent_layout().channels;
  if (const auto* flux = dynamic_cast<const FluxModel*>(&model)) {
    const FluxConfig& c = flux->config();
    const int64_t tokens = (side / 2) * (side / 2);
    NamedTensors in = {{"hidden_states", torch::randn({batch, tokens, c.in_channels})},
                       {"encoder_hidden_states", torch::randn({batch, kTextTokens, c.joint_attention_dim})},
                       {"pooled_projections", torch::randn({batch, c.pooled_projection_dim})},
                       {"timestep", torch::full({batch}, 0.5)},
                       {"img_ids", torch::zeros({tokens, 3})},
                       {"txt_ids", torch::zeros({kTextTokens, 3})}};
    if (c.guidance_embeds) in["guidance"] = torch::full({batch}, 3.5);
    return in;
  }
  if (const auto* qwen = dynamic_cast<const QwenImageModel*>(&model)) {
    const QwenImageConfig& c = qwen->config();
    const int64_t tokens = (side / 2) * (side / 2);
    return {{"hidden_states", torch::randn({batch, tokens, c.in_channels})},
            {"encoder_hidden_states", torch::randn({batch, kTextTokens, c.joint_attention_dim})},
            {"timestep", torch::full({batch}, 0.5)},
            {"img_shapes", torch::tensor({int64_t{1}, side / 2, side / 2}).unsqueeze(0).repeat({batch, 1})}};
  }
  if (const auto* krea2 = dynamic_cast<const Krea2Model*>(&model)) {
    const Krea2Config& c = krea2->config();
    const int64_t tokens = (side / 2) * (side / 2);
    return {{"hidden_states", torch::randn({batch, tokens, c.in_channels})},
            {"encoder_hidden_states", torch::randn({batch, kTextTokens, c.num_text_layers, c.text_hidden_dim})},
            {"timestep", torch::full({batch}, 0.5)},
            {"position_ids", krea2_position_ids(kTextTokens, side / 2, side / 2)}};
  }
  if (const auto* wan = dynamic_cast<const WanModel*>(&model)) {
    return {{"hidden_states", torch::randn({batch, channels, 1, side, side})},
            {"timestep", torch::full({batch}, 500.0)},
            {"encoder_hidden_states", torch::randn({batch, kTextTokens, wan->config().text_dim})}};
  }
  if (const auto* cosmos = dynamic_cast<const CosmosModel*>(&model)) {
    return {{"hidden_states", torch::randn({batch, channels, 1, side, side})},
            {"timestep", torch::full({batch}, 0.5)},
            {"encoder_hidden_states", torch::randn({batch, kTextTokens, cosmos->config().text_embed_dim})}};
  }
  const auto& z = static_cast<const ZImageModel&>(model);
  return {{"x", torch::randn({batch, channels, 1, side, side})},
          {"t", torch::full({batch}, 0.5)},
          {"cap_feats", torch::randn({batch, kTextTokens, z.config().cap_feat_dim})}};
}

bool run_step(const DiffusionModel& model, const FlowPredictor& predict, int64_t side, bool guided) {
  DenoiseRequest r;
  r.latent_shape = {model.latent_layout().channels, side, side};
  r.seed = 1;
  r.guidance_scale = guided ? 2.0 : 1.0;
  r.has_negative = guided;
  r.schedule = model.default_schedule(r.latent_shape);
  r.schedule.steps = 1;
  return denoise(predict, model.flow_convention(), r).ok();
}

int run(int argc, char** argv) {
  if (argc < 4) return 2;
  const std::string arch = argv[1];
  const int64_t side = std::atoll(argv[2]);
  const int64_t batch = std::atoll(argv[3]);
  const bool step = argc > 4 && std::strcmp(argv[4], "step") == 0;
  tune_allocator_for_serving();
  const absl::StatusOr<torch::ScalarType> dtype = parse_compute_dtype(argc > 5 ? argv[5] : "float32");
  if (!dtype.ok() || (batch != 1 && batch != 2)) return 2;
  torch::manual_seed(0);
  const std::unique_ptr<DiffusionModel> model = make_model(arch, *dtype);
  if (model == nullptr) return 1;
  const bool guided = batch == 2;
  const Conditioning positive = random_conditioning(*model), negative = random_conditioning(*model);
  absl::StatusOr<FlowPredictor> predict = model->flow_predictor(positive, guided ? &negative : nullptr);
  if (!predict.ok()) return 1;
  const auto call = [&](int64_t s, const NamedTensors& inputs) {
    return step ? model->step(inputs).ok() : run_step(*model, *predict, s, guided);
  };
  if (!call(16, step_inputs(*model, 16, batch))) return 1;
  const NamedTensors inputs = step ? step_inputs(*model, side, batch) : NamedTensors();
  release_free_heap_to_os();

  ActivationQuery query;
  if (step) {
    std::optional<ActivationQuery> q = model->step_activation_query(inputs);
    if (!q.has_value()) return 1;
    query = *q;
  } else {
    query.latent_shape = {model->latent_layout().channels, side, side};
    query.batch = batch;
    query.text_tokens = kTextTokens;
    query.compute_dtype = *dtype;
    query.denoise_loop = true;
  }
  const ActivationEstimate estimate = model->estimate_activations(query);

  if (!reset_peak_rss().ok()) return 1;
  const absl::StatusOr<ProcessMemory> before = read_process_memory();
  const bool ran = call(side, inputs);
  const absl::StatusOr<ProcessMemory> after = read_process_memory();
  if (!ran || !before.ok() || !after.ok()) return 1;
  std::printf("peak_rss_delta_bytes=%lld\n", static_cast<long long>(after->peak_rss_bytes - before->rss_bytes));
  std::printf("estimate_bytes=%lld\n", static_cast<long long>(estimate.bytes));
  std::printf("breakdown=%s\n", estimate.breakdown.c_str());
  return 0;
}

}  // namespace
}  // namespace diffusiond

int main(int argc, char** argv) { return diffusiond::run(argc, argv); }
