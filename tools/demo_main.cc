// diffusiond-demo: the engine's main job end to end on a small built-in
// model of any served architecture — generate it (random weights, real
// diffusers file format) if absent, load it through the cache under the RAM
// budget with FP8 storage, and denoise it (with classifier-free guidance
// where the architecture takes a negative), showing progress. Writes the
// final latents as a .safetensors file.
//
//   diffusiond-demo [--arch z-image|flux|qwen-image|krea2|wan|cosmos] [--model_dir DIR]
//                   [--steps N] [--size PX] [--frames F] [--seed N]
//                   [--guidance S] [--fp8 e4m3fn|e5m2|off] [--out FILE]
//     --frames: latent frames of a video model (Wan: [16, F, H, W]; default
//     2, a 5-frame clip through Wan's 4x temporal VAE); image models ignore it.
//   diffusiond-demo --arch A --model_dir DIR --generate_only [--inputs_dir DIR2]
//     writes the model (and, with --inputs_dir, random conditioning as
//     DIR2/conditioning.safetensors and DIR2/negative.safetensors, for
//     clients of the daemon) and exits.
//   diffusiond-demo --write_pipeline DIR [--pipeline z-image|flux|qwen-image|krea2|wan|wan22|anima]
//     writes a random-weight pipeline folder for the daemon's Generate, and
//     exits: Z-Image's (Qwen3 text encoder with its tokenizer, transformer,
//     VAE), FLUX.1-dev's (CLIP and T5 with their tokenizers, transformer,
//     VAE), Qwen-Image's (Qwen2.5-VL with its tokenizer, transformer,
//     AutoencoderKLQwenImage), Krea 2's (Qwen3-VL with its tokenizer,
//     transformer, AutoencoderKLQwenImage), Wan 2.1's (UMT5 with its
//     tokenizer, transformer, the causal 3-D VAE: a video pipeline), Wan
//     2.2's (the same with a second expert, transformer_2, and boundary_ratio
//     0.875) or Anima's (Qwen3 with its tokenizer, the text conditioner
//     with its T5 tokenizer, the Cosmos transformer, AutoencoderKLQwenImage;
//     a modular pipeline's modular_model_index.json). A folder that already
//     has its index is left as it is.
//   diffusiond-demo --write_lora FILE
//     writes a random rank-4 LoRA adapter (diffusers/PEFT keys) on every
//     attention projection of the FLUX.1 demo pipeline's transformer, for
//     Generate's adapters, and exits.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/cpu/blas_kernels.h"
#include "core/engine/model_admission.h"
#include "core/memory/allocator.h"
#include "core/memory/default_budget.h"
#include "core/memory/process_memory.h"
#include "core/models/diffusion_model.h"
#include "core/models/model_loader.h"
#include "core/precision/torch_dtype.h"
#include "core/util/bytes.h"
#include "core/util/status_macros.h"
#include "tools/random_models/demo_models.h"
#include "tools/random_models/anima_pipeline_random.h"
#include "tools/random_models/flux_pipeline_random.h"
#include "tools/random_models/krea2_pipeline_random.h"
#include "tools/random_models/lora_random.h"
#include "tools/random_models/pipeline_index_random.h"
#include "tools/random_models/pipeline_random.h"
#include "tools/random_models/qwen_image_pipeline_random.h"
#include "tools/random_models/wan_pipeline_random.h"

namespace diffusiond {
namespace {

struct Args {
  std::string arch = "z-image";
  std::string model_dir = "demo-model";
  std::string out = "demo-latents.safetensors";
  int steps = 8;
  int64_t size_px = 512;  // latents are size/8
  int64_t frames = 2;     // latent frames of a video model
  uint64_t seed = 42;
  double guidance = 4.0;
  Fp8Options fp8 = {Fp8Format::kE4M3Fn, Fp8Scaling::kNone};
  bool generate_only = false;  // write the demo model for the daemon and stop
  std::string inputs_dir;      // with generate_only: also write the caption features
  std::string pipeline_dir;    // write a pipeline folder there and stop
  std::string pipeline = "z-image";  // which pipeline --write_pipeline writes
  std::string lora_file;             // write a LoRA for the FLUX demo pipeline there and stop
};

absl::StatusOr<Args> parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--generate_only") {
      a.generate_only = true;
      continue;
    }
    if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
    const std::string v = argv[++i];
    int64_t n = 0;
    double d = 0;
    if (flag == "--arch") a.arch = v;
    else if (flag == "--write_pipeline") a.pipeline_dir = v;
    else if (flag == "--write_lora") a.lora_file = v;
    else if (flag == "--pipeline" && (v == "z-image" || v == "flux" || v == "qwen-image" || v == "krea2" ||
                                      v == "wan" || v == "wan22" || v == "anima"))
      a.pipeline = v;
    else if (flag == "--model_dir") a.model_dir = v;
    else if (flag == "--inputs_dir") a.inputs_dir = v;
    else if (flag == "--out") a.out = v;
    else if (flag == "--steps" && absl::SimpleAtoi(v, &n) && n > 0 && n <= 1000) a.steps = static_cast<int>(n);
    else if (flag == "--size" && absl::SimpleAtoi(v, &n) && n >= 16 && n % 16 == 0 && n <= 4096) a.size_px = n;
    else if (flag == "--frames" && absl::SimpleAtoi(v, &n) && n >= 1 && n <= 64)
      a.frames = n;
    else if (flag == "--seed" && absl::SimpleAtoi(v, &n) && n >= 0) a.seed = static_cast<uint64_t>(n);
    else if (flag == "--guidance" && absl::SimpleAtod(v, &d) && d >= 0) a.guidance = d;
    else if (flag == "--fp8" && v == "off") a.fp8.format.reset();
    else if (Fp8Format f; flag == "--fp8" && parse_fp8_format(v.c_str(), &f)) a.fp8.format = f;
    else return absl::InvalidArgumentError(absl::StrCat("bad flag or value: ", flag, " ", v));
  }
  return a;
}

std::string rss() {
  absl::StatusOr<ProcessMemory> m = read_process_memory();
  return m.ok() ? format_bytes(m->rss_bytes) : "?";
}

// Writes the demo model if absent.
absl::Status generate(const Args& args) {
  if (std::filesystem::exists(std::filesystem::path(args.model_dir) / "config.json")) return absl::OkStatus();
  std::printf("generating the %s demo model (random weights, diffusers format) in %s\n", args.arch.c_str(),
              args.model_dir.c_str());
  return write_demo_model(args.arch, args.model_dir, 1);
}

// Conditioning stands in for a text encoder's output: 77 tokens, and 11 for
// the negative.
Conditioning demo_conditioning(const DiffusionModel& model, uint64_t seed, bool negative) {
  return random_conditioning(model.conditioning_inputs(), negative ? 11 : 77, seed + (negative ? 1000 : 1));
}

absl::Status run(const Args& args) {
  tune_allocator_for_serving();
  if (!args.lora_file.empty()) {
    if (std::filesystem::exists(args.lora_file)) return absl::OkStatus();
    std::printf("generating a random LoRA for the FLUX.1 demo pipeline in %s\n", args.lora_file.c_str());
    return write_lora_file(args.lora_file, random_flux_attention_lora(demo_flux_pipeline_sizes().transformer, 4,
                                                                      args.seed));
  }
  if (!args.pipeline_dir.empty()) {
    if (pipeline_index_written(args.pipeline_dir)) return absl::OkStatus();
    std::printf("generating a %s pipeline (random weights, diffusers layout) in %s\n", args.pipeline.c_str(),
                args.pipeline_dir.c_str());
    if (args.pipeline == "flux") {
      return write_random_flux_pipeline(demo_flux_pipeline_sizes(), args.pipeline_dir, args.seed);
    }
    if (args.pipeline == "qwen-image") {
      return write_random_qwen_image_pipeline(demo_qwen_image_pipeline_sizes(), args.pipeline_dir, args.seed);
    }
    if (args.pipeline == "krea2") {
      return write_random_krea2_pipeline(demo_krea2_pipeline_sizes(), args.pipeline_dir, args.seed);
    }
    if (args.pipeline == "wan" || args.pipeline == "wan22") {
      WanPipelineSizes sizes = demo_wan_pipeline_sizes();
      if (args.pipeline == "wan22") sizes.boundary_ratio = 0.875;  // Wan2.2-T2V-A14B's
      return write_random_wan_pipeline(sizes, args.pipeline_dir, args.seed);
    }
    if (args.pipeline == "anima") {
      return write_random_anima_pipeline(demo_anima_pipeline_sizes(), args.pipeline_dir, args.seed);
    }
    return write_random_pipeline(demo_pipeline_sizes(), args.pipeline_dir, args.seed);
  }
  DIFFUSIOND_RETURN_IF_ERROR(generate(args));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::open(args.model_dir));
  DIFFUSIOND_ASSIGN_OR_RETURN(MachineMemory machine, probe_machine_memory());
  Budget ram(Device::kCpu, default_ram_budget_bytes(machine));
  ModelCacheOptions co;
  co.ram_budget = &ram;
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<ModelCache> cache, ModelCache::create(co));

  ModelLoadOptions lo;
  lo.fp8 = args.fp8;
  lo.keep_narrow = true;  // as the daemon's --narrow_weights default
  // On a terminal the progress line redraws in place; in a log, one line per quarter.
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  lo.stream.on_progress = [tty, printed = -1](const LoadProgress& p) mutable {
    const int quarter = p.total_bytes > 0 ? static_cast<int>(4 * p.bytes_read / p.total_bytes) : 4;
    if (!tty && quarter <= printed) return;
    printed = quarter;
    std::printf("%s  loading %lld/%lld tensors, %s of %s%s", tty ? "\r" : "",
                static_cast<long long>(p.tensors_done), static_cast<long long>(p.total_tensors),
                format_bytes(p.bytes_read).c_str(), format_bytes(p.total_bytes).c_str(), tty ? "" : "\n");
    std::fflush(stdout);
  };
  DIFFUSIOND_ASSIGN_OR_RETURN(ModelPlan mp, plan_model(*ckpt, lo));
  std::printf("model %s\n  %s\n  reservation %s (budget %s, RSS %s)\n", ckpt->path().c_str(),
              mp.recipe->describe().c_str(), format_bytes(mp.plan.reservation_bytes()).c_str(),
              format_bytes(ram.capacity_bytes()).c_str(), rss().c_str());
  const absl::Time load_start = absl::Now();
  DIFFUSIOND_ASSIGN_OR_RETURN(Pin pin, cache->get_or_load(ckpt->path(), [&] {
    return load_planned_model(*ckpt, mp, *cache, lo.stream);
  }));
  const auto* denoiser = dynamic_cast<const DiffusionModel*>(&pin.as<LoadedModel>()->model());
  if (denoiser == nullptr) return absl::InvalidArgumentError(absl::StrCat(args.model_dir, " is not a denoiser"));
  const DiffusionModel& model = *denoiser;
  if (args.generate_only) {
    if (args.inputs_dir.empty()) return absl::OkStatus();
    std::filesystem::create_directories(args.inputs_dir);
    DIFFUSIOND_RETURN_IF_ERROR(
        write_float32_tensors(args.inputs_dir + "/conditioning.safetensors", demo_conditioning(model, args.seed, false).tensors));
    return write_float32_tensors(args.inputs_dir + "/negative.safetensors", demo_conditioning(model, args.seed, true).tensors);
  }
  std::printf("%s  loaded in %.2f s: %lld tensors, %lld FP8, %s held, compute dtype %s, RSS %s\n",
              tty ? "\n" : "", absl::ToDoubleSeconds(absl::Now() - load_start),
              static_cast<long long>(model.weights().size()),
              static_cast<long long>(model.weights().fp8_count()),
              format_bytes(model.weights().nbytes()).c_str(),
              scalar_type_name(compute_dtype(model)).c_str(), rss().c_str());

  const Conditioning positive = demo_conditioning(model, args.seed, false);
  const Conditioning negative = demo_conditioning(model, args.seed, true);
  const bool guided = model.supports_negative() && args.guidance > 1;
  DenoiseRequest request;
  const int64_t latent = args.size_px / 8;
  request.latent_shape = demo_latent_shape(model.latent_layout(), latent, args.frames);
  request.seed = args.seed;
  request.guidance_scale = guided ? args.guidance : 1.0;
  request.has_negative = guided;
  request.schedule = model.default_schedule(request.latent_shape);
  request.schedule.steps = args.steps;
  DenoiseOptions options;
  options.on_step = [](const StepEvent& e) {
    std::printf("  step %2d/%d  sigma %.4f  %.2f s\n", e.step, e.steps, e.sigma,
                absl::ToDoubleSeconds(e.step_time));
    std::fflush(stdout);
  };
  std::printf("denoising a %lldx%lld %s (latent [%s]), %d steps, %s, seed %llu\n", static_cast<long long>(args.size_px),
              static_cast<long long>(args.size_px), request.latent_shape.size() == 4 ? "video" : "image",
              absl::StrJoin(request.latent_shape, ", ").c_str(), args.steps,
              guided ? absl::StrCat("guidance ", args.guidance).c_str() : "no classifier-free guidance",
              static_cast<unsigned long long>(args.seed));
  const absl::Time start = absl::Now();
  DIFFUSIOND_ASSIGN_OR_RETURN(FlowPredictor predict, model.flow_predictor(positive, guided ? &negative : nullptr));
  DIFFUSIOND_ASSIGN_OR_RETURN(DenoiseResult result, denoise(predict, model.flow_convention(), request, options));
  const torch::Tensor& out = result.latents;
  std::printf("done in %.2f s: latents mean %.4f, std %.4f, RSS %s\n",
              absl::ToDoubleSeconds(absl::Now() - start), out.mean().item<float>(),
              out.std().item<float>(), rss().c_str());

  DIFFUSIOND_RETURN_IF_ERROR(write_float32_tensors(args.out, {{"latents", out}}));
  std::printf("wrote %s\n", args.out.c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace diffusiond

int main(int argc, char** argv) {
  // Before any BLAS call (core/cpu/blas_kernels.h).
  const diffusiond::BlasChoice blas = diffusiond::ensure_blas_kernels(argv);
  std::fprintf(stderr, "blas: %s\n", blas.summary.c_str());
  absl::StatusOr<diffusiond::Args> args = diffusiond::parse(argc, argv);
  if (!args.ok()) {
    std::fprintf(stderr, "diffusiond-demo: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  const absl::Status s = diffusiond::run(*args);
  if (!s.ok()) {
    std::fprintf(stderr, "diffusiond-demo: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
