#include "tests/bench/gpu_bench_z_image.h"

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/engine/model_admission.h"
#include "core/models/z_image/z_image_model.h"
#include "core/util/remove_tree.h"
#include "core/vram/block_layout.h"
#include "core/vram/cuda_device.h"
#include "core/vram/device_placement.h"
#include "core/vram/residency_plan.h"
#include "core/vram/sim_device.h"
#include "tools/random_models/demo_models.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond::bench {
namespace {

// A loaded model with everything it needs kept alive, teardown in order.
struct Loaded {
  std::unique_ptr<Budget> ram;
  std::unique_ptr<ModelCache> cache;
  std::unique_ptr<Checkpoint> checkpoint;
  Pin pin;
  const ZImageModel* model = nullptr;
};

std::unique_ptr<Loaded> load(const std::string& folder, bool fp8) {
  auto l = std::make_unique<Loaded>();
  l->ram = std::make_unique<Budget>(Device::kCpu, int64_t{64} << 30);
  ModelCacheOptions co;
  co.ram_budget = l->ram.get();
  l->cache = value_or_throw(ModelCache::create(co));
  l->checkpoint = value_or_throw(Checkpoint::open(folder));
  ModelLoadOptions options;
  options.compute_dtype = torch::kBFloat16;
  if (fp8) options.fp8.format = Fp8Format::kE4M3Fn;
  l->pin = value_or_throw(l->cache->get_or_load("m", [&] { return load_model(*l->checkpoint, options, *l->cache); }));
  l->model = dynamic_cast<const ZImageModel*>(&l->pin.as<LoadedModel>()->model());
  if (l->model == nullptr) throw std::runtime_error("not a Z-Image model");
  return l;
}

// A placement of `model` under `budget` bytes, with its VRAM charged.
struct Placed {
  std::unique_ptr<Budget> vram;
  Charge charge;
  std::unique_ptr<DevicePlacement> placement;
  ~Placed() {
    placement.reset();
    charge.release();
  }
};

std::unique_ptr<Placed> place(const ZImageModel& model, VramDevice& device, int64_t budget) {
  auto p = std::make_unique<Placed>();
  const BlockLayout layout = block_layout(model);
  const ResidencyPlan plan = value_or_throw(plan_residency(layout.residency_input(budget)));
  p->vram = std::make_unique<Budget>(Device::kCuda, budget);
  Reservation r = value_or_throw(p->vram->reserve(plan.device_bytes()));
  p->placement = value_or_throw(DevicePlacement::create(model, device, layout, plan, r));
  p->charge = std::move(r).commit();
  return p;
}

// Bytes of the whole model on the device, and of the placement that keeps
// about half its blocks.
std::pair<int64_t, int64_t> whole_and_half(const ZImageModel& model) {
  const BlockLayout layout = block_layout(model);
  int64_t blocks = 0, largest = 0;
  for (const WeightBlock& b : layout.blocks) blocks += b.bytes, largest = std::max(largest, b.bytes);
  return {layout.global_bytes + blocks, layout.global_bytes + blocks / 2 + 2 * largest};
}

struct StepInputs {
  torch::Tensor x, t, caption;
};

double seconds_per_step(const ZImageModel& model, DevicePlacement& placement, const StepInputs& in,
                        const torch::Device& device, int trials) {
  return best_seconds_per_call(device, trials, 1, [&] {
    DeviceForward source(placement);
    // The outputs come back to the host: the daemon's step does the same.
    (void)value_or_throw(model.forward({in.x}, in.t, {in.caption}));
  });
}

}  // namespace

nlohmann::json z_image_step_section(const BenchOptions& options) {
  const bool gpu = options.device.is_cuda();
  const std::string folder = (std::filesystem::temp_directory_path() / "diffusiond_gpu_bench_z_image").string();
  remove_tree(folder);
  int64_t tokens = 8;
  std::vector<int64_t> latent = {16, 1, 16, 16};
  if (gpu) {
    tokens = value_or_throw(write_mid_size_model("z-image", folder, 7));
    latent = {16, 1, 128, 128};
  } else {
    ZImageConfig c = demo_z_image_config();
    ok_or_throw(write_random_z_image(c, folder, 7));
  }
  std::unique_ptr<VramDevice> device;
  if (gpu) {
    device = value_or_throw(open_cuda_device(options.device.index()));
  } else {
    device = std::make_unique<SimDevice>(SimDeviceOptions{int64_t{8} << 30, 0});
  }
  torch::manual_seed(0);
  const std::unique_ptr<Loaded> dense = load(folder, false), fp8 = load(folder, true);
  const int64_t cap_dim = dense->model->config().cap_feat_dim;
  const StepInputs in{torch::randn(latent), torch::tensor({0.5f}), torch::randn({tokens, cap_dim})};
  const int trials = gpu ? 5 : 1;

  nlohmann::json out = {{"model", gpu ? "z-image mid-size: dim 1536, 8 + 2 layers" : "z-image demo (dry run)"},
                        {"latent", latent},
                        {"caption_tokens", tokens},
                        {"compute_dtype", "bfloat16"},
                        {"vram_device", device->name()}};
  const auto [whole_bytes, half_bytes] = whole_and_half(*dense->model);
  double bf16_s = 0, fp8_s = 0, half_s = 0;
  {
    std::unique_ptr<Placed> p = place(*dense->model, *device, whole_bytes);
    bf16_s = seconds_per_step(*dense->model, *p->placement, in, options.device, trials);
    out["bf16_storage"] = {{"seconds_per_step", bf16_s}, {"placement", p->placement->plan().summary()},
                           {"vram_bytes", p->placement->plan().device_bytes()}};
  }
  {
    const int64_t fp8_whole = whole_and_half(*fp8->model).first;
    std::unique_ptr<Placed> p = place(*fp8->model, *device, fp8_whole);
    fp8_s = seconds_per_step(*fp8->model, *p->placement, in, options.device, trials);
    out["fp8_storage"] = {{"seconds_per_step", fp8_s}, {"placement", p->placement->plan().summary()},
                          {"vram_bytes", p->placement->plan().device_bytes()}};
  }
  out["fp8_over_bf16_step_time"] = fp8_s / bf16_s;
  {
    std::unique_ptr<Placed> p = place(*dense->model, *device, half_bytes);
    const ResidencyPlan& plan = p->placement->plan();
    half_s = seconds_per_step(*dense->model, *p->placement, in, options.device, trials);
    out["half_resident"] = {{"seconds_per_step", half_s}, {"placement", plan.summary()},
                            {"vram_bytes", plan.device_bytes()},
                            {"streamed_bytes_per_step", plan.streamed_bytes_per_forward}};
    out["half_resident_over_resident_step_time"] = half_s / bf16_s;

    // The tier's copy path alone: every streamed block brought in, one
    // ahead, with no compute between.
    const BlockLayout layout = block_layout(*dense->model);
    const int64_t before = p->placement->bytes_streamed();
    const double stream_s = best_seconds_per_call(options.device, trials, 1, [&] {
      DeviceForward source(*p->placement);
      for (size_t b = 0; b < layout.blocks.size(); ++b) {
        if (!plan.resident[b]) (void)source.param(layout.blocks[b].weights.front(), torch::kBFloat16);
      }
    });
    const int64_t streamed = (p->placement->bytes_streamed() - before) / (trials + 1);
    // A plain pinned copy of as many bytes.
    torch::Tensor host = torch::empty({streamed}, torch::kUInt8);
    if (gpu) host = host.pin_memory();
    torch::Tensor target = torch::empty({streamed}, torch::TensorOptions().dtype(torch::kUInt8).device(options.device));
    const double pinned_s = best_seconds_per_call(options.device, trials, 1, [&] { target.copy_(host, true); });
    out["streaming"] = {{"tier", throughput(stream_s, streamed)}, {"plain_pinned_copy", throughput(pinned_s, streamed)},
                        {"tier_over_pinned_rate", pinned_s / stream_s}};
  }
  remove_tree(folder);
  return out;
}

}  // namespace diffusiond::bench
