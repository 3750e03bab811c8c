// diffusiond-checkpoint: what a load would hold, and a real load through the
// cache under a budget, for people and scripts.
//
//   diffusiond-checkpoint plan PATH [--fp8 e4m3fn|e5m2|off] [--fp8_scaling none|max]
//                              [--compute_dtype float32|bfloat16|float16]
//                              [--narrow_weights true|false] [--json]
//   diffusiond-checkpoint load PATH [same options] [--budget BYTES] [--switches N] [--json]
//   diffusiond-checkpoint plan-config CONFIG.json [same options as plan]
//
// A checkpoint of a registered architecture (core/models/model_family.h) is
// planned and loaded as that model: its parameter table, key map and
// precision declaration apply, and `load` builds the model. plan-config
// sizes a model of any of these from its config.json alone (bf16 weights
// assumed), without weights, and says what the model's own declaration keeps
// from FP8 beyond the default skip patterns.
//
// --switches N loads the checkpoint N more times after the first, under two
// cache keys in turn: with a --budget that holds one copy, each load evicts
// the other first and writes over its memory (core/memory/recycled_pages.h),
// as a switch between two models of one architecture does. It reports each
// switch's seconds and the peak RSS over all of them.
//
// PATH is a .safetensors file or a diffusers model folder. Any bad input
// exits 1 with one line naming the file and the problem; bad usage exits 2.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/checkpoint/checkpoint.h"
#include "core/cpu/blas_kernels.h"
#include "core/engine/model_admission.h"
#include "core/loader/declared_exclusions.h"
#include "core/loader/load_plan.h"
#include "core/loader/streaming_loader.h"
#include "core/memory/allocator.h"
#include "core/memory/default_budget.h"
#include "core/memory/process_memory.h"
#include "core/models/model_loader.h"
#include "core/models/vae/vae_family.h"
#include "core/models/vae/vae_memory.h"
#include "core/precision/torch_dtype.h"
#include "core/util/bytes.h"
#include "core/util/file_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kUsage[] =
    "usage: diffusiond-checkpoint plan|load|plan-config PATH [--fp8 e4m3fn|e5m2|off]\n"
    "         [--fp8_scaling none|max] [--compute_dtype float32|bfloat16|float16]\n"
    "         [--narrow_weights true|false] [--budget BYTES] [--json]\n";

struct Args {
  std::string command, path;
  PlanOptions plan;
  std::optional<int64_t> budget_bytes;
  int switches = 0;
  bool json = false;
};

absl::StatusOr<Args> parse_args(int argc, char** argv) {
  if (argc < 3) return absl::InvalidArgumentError("expected a command and a PATH");
  Args a;
  a.plan.keep_narrow = true;  // as the daemon's --narrow_weights default
  a.command = argv[1];
  a.path = argv[2];
  if (a.command != "plan" && a.command != "load" && a.command != "plan-config") {
    return absl::InvalidArgumentError(absl::StrCat("unknown command '", a.command, "'"));
  }
  for (int i = 3; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--json") {
      a.json = true;
      continue;
    }
    if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
    const std::string value = argv[++i];
    if (flag == "--fp8") {
      if (Fp8Format f; parse_fp8_format(value.c_str(), &f)) a.plan.fp8.format = f;
      else if (value != "off") return absl::InvalidArgumentError(absl::StrCat("--fp8 ", value, ": expected e4m3fn, e5m2 or off"));
    } else if (flag == "--fp8_scaling") {
      if (value == "max") a.plan.fp8.scaling = Fp8Scaling::kPerTensorMax;
      else if (value != "none") return absl::InvalidArgumentError(absl::StrCat("--fp8_scaling ", value, ": expected none or max"));
    } else if (flag == "--compute_dtype") {
      DIFFUSIOND_ASSIGN_OR_RETURN(a.plan.compute_dtype, parse_compute_dtype(value));
    } else if (flag == "--narrow_weights") {
      if (value != "true" && value != "false") {
        return absl::InvalidArgumentError(absl::StrCat("--narrow_weights ", value, ": expected true or false"));
      }
      a.plan.keep_narrow = value == "true";
    } else if (flag == "--budget" && a.command == "load") {
      DIFFUSIOND_ASSIGN_OR_RETURN(a.budget_bytes, parse_bytes(value));
    } else if (flag == "--switches" && a.command == "load") {
      if (!absl::SimpleAtoi(value, &a.switches) || a.switches < 0 || a.switches > 1000) {
        return absl::InvalidArgumentError(absl::StrCat("--switches ", value, ": expected a count from 0 to 1000"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag, " for ", a.command));
    }
  }
  return a;
}

nlohmann::json plan_json(const LoadPlan& plan) {
  nlohmann::json j;
  j["tensors"] = plan.tensors.size();
  j["fp8_tensors"] = plan.fp8_tensors();
  j["source_bytes"] = plan.source_bytes;
  j["final_bytes"] = plan.final_bytes;
  j["staging_bytes"] = plan.staging_bytes;
  j["reservation_bytes"] = plan.reservation_bytes();
  j["bytes_by_storage"] = plan.bytes_by_storage();
  j["count_by_storage"] = plan.count_by_storage();
  return j;
}

void print_plan(const LoadPlan& plan) {
  std::printf("compute dtype %s; FP8 storage %s\n\n", scalar_type_name(plan.compute_dtype).c_str(),
              !plan.fp8.format ? "off" : fp8_format_name(*plan.fp8.format));
  std::printf("  %-12s %8s  %s\n", "storage", "tensors", "bytes");
  const auto counts = plan.count_by_storage();
  for (const auto& [storage, bytes] : plan.bytes_by_storage()) {
    std::printf("  %-12s %8lld  %s\n", storage.c_str(), static_cast<long long>(counts.at(storage)),
                format_bytes(bytes).c_str());
  }
  std::printf("  %-12s %8zu  %s\n\n", "total", plan.tensors.size(),
              format_bytes(plan.final_bytes).c_str());
  std::printf("staging buffer  %s (conversions stream through it in chunks)\n",
              format_bytes(plan.staging_bytes).c_str());
  std::printf("reservation     %s (final + staging)\n\n",
              format_bytes(plan.reservation_bytes()).c_str());
  std::printf("not stored as FP8, and why:\n");
  for (const PlannedTensor& t : plan.tensors) {
    if (t.action == PlannedTensor::Action::kFp8Encode || t.action == PlannedTensor::Action::kFp8Keep) continue;
    std::printf("  %-56s [%s] %s: %s\n", t.name.c_str(),
                absl::StrJoin(t.source->shape, ", ").c_str(), storage_name(t).c_str(),
                t.reason.c_str());
  }
}

nlohmann::json exclusions_json(const DeclaredExclusions& e) {
  return {{"tensors", e.tensors},
          {"parameters", e.parameters},
          {"bytes_over_fp8", e.bytes_over_fp8},
          {"parameters_by_module", e.parameters_by_module}};
}

// What the model's own skip and keep-in-float32 lists keep from FP8 beyond
// the default patterns: the figure to compare with upstream's casting.
void print_exclusions(const DeclaredExclusions& e, torch::ScalarType compute_dtype) {
  std::printf("\nkept at compute precision beyond the default skip patterns (the model's declaration):\n");
  if (e.tensors == 0) {
    std::printf("  none\n");
    return;
  }
  const double mib = 1024.0 * 1024.0;
  std::printf(
      "  %lld layer weights, %lld parameters (%.1f M; %.1f MiB as FP8 codes); as planned at %s they hold "
      "%.1f MiB more\n",
      static_cast<long long>(e.tensors), static_cast<long long>(e.parameters), e.parameters / 1e6, e.parameters / mib,
      scalar_type_name(compute_dtype).c_str(), e.bytes_over_fp8 / mib);
  for (const auto& [module, parameters] : e.parameters_by_module) {
    std::printf("  %-24s %lld parameters\n", module.c_str(), static_cast<long long>(parameters));
  }
}

// A VAE's decode also needs activations, which the engine reserves before
// each decode: shown for common image sizes, untiled and tiled.
void print_vae_activations(const std::string& text, const std::string& path, torch::ScalarType dtype) {
  absl::StatusOr<VaeConfig> config = parse_vae_config(text, path);
  if (!config.ok()) return;
  const int64_t element = torch::elementSize(dtype);
  std::printf("\ndecode activations (reserved per decode)\n  image        untiled      tiled\n");
  for (int64_t side : {512, 1024, 2048}) {
    const int64_t h = side / config->scale_factor();
    std::printf("  %4lldx%-4lld  %-11s  %s\n", static_cast<long long>(side), static_cast<long long>(side),
                format_bytes(vae_decode_activation_bytes(*config, 1, h, h, element, std::nullopt)).c_str(),
                format_bytes(vae_decode_activation_bytes(*config, 1, h, h, element, default_vae_tiling(*config))).c_str());
  }
}

// Sizes a model from its config: the parameter table stands in for the
// checkpoint's headers (bf16 weights, as released).
absl::Status run_plan_config(const Args& args) {
  DIFFUSIOND_ASSIGN_OR_RETURN(std::string text, read_text_file(args.path));
  const ModelFamily* family = find_family_for_config(text);
  if (family == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(args.path, ": config class \"", config_class_name(text),
                                                   "\" is not an architecture this build serves"));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(std::shared_ptr<const LoadRecipe> recipe, family->recipe_for_config(text, args.path));
  ModelLoadOptions options;
  options.compute_dtype = args.plan.compute_dtype;
  options.fp8 = args.plan.fp8;
  options.keep_narrow = args.plan.keep_narrow;
  DIFFUSIOND_ASSIGN_OR_RETURN(ConfigPlan config_plan, plan_model_config(recipe, options, args.path));
  const LoadPlan& plan = config_plan.plan;
  // The model's own exclusions are a question about FP8 storage, answered
  // at e4m3fn when the plan itself has FP8 off.
  std::optional<ConfigPlan> fp8_plan;
  if (!options.fp8.format.has_value()) {
    options.fp8.format = Fp8Format::kE4M3Fn;
    DIFFUSIOND_ASSIGN_OR_RETURN(fp8_plan, plan_model_config(recipe, options, args.path));
  }
  const ConfigPlan& with_fp8 = fp8_plan.has_value() ? *fp8_plan : config_plan;
  DIFFUSIOND_ASSIGN_OR_RETURN(DeclaredExclusions exclusions, declared_exclusions(with_fp8.plan, with_fp8.options));
  std::printf("config  %s (%s: %s; bf16 weights assumed)\n", args.path.c_str(), std::string(family->name()).c_str(),
              recipe->describe().c_str());
  if (args.json) {
    nlohmann::json j = plan_json(plan);
    j["declared_exclusions"] = exclusions_json(exclusions);
    std::printf("%s\n", j.dump().c_str());
    return absl::OkStatus();
  }
  print_plan(plan);
  print_exclusions(exclusions, with_fp8.plan.compute_dtype);
  if (family == vae_family()) print_vae_activations(text, args.path, args.plan.compute_dtype);
  return absl::OkStatus();
}

void print_checkpoint_plan(const Checkpoint& ckpt, const LoadPlan& plan, const std::string& architecture,
                           bool json) {
  if (json) {
    nlohmann::json j = plan_json(plan);
    j["path"] = ckpt.path();
    j["layout"] = std::string(layout_name(ckpt.layout()));
    j["architecture"] = architecture;
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("checkpoint  %s\n  layout %s, %zu file(s), %zu tensors, %s of tensor data\n",
              ckpt.path().c_str(), std::string(layout_name(ckpt.layout())).c_str(), ckpt.files().size(),
              ckpt.tensors().size(), format_bytes(plan.source_bytes).c_str());
  std::printf("architecture  %s\n", architecture.c_str());
  print_plan(plan);
}

absl::Status run(const Args& args) {
  if (args.command == "plan-config") return run_plan_config(args);
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::open(args.path));
  ModelLoadOptions model_options;
  model_options.compute_dtype = args.plan.compute_dtype;
  model_options.fp8 = args.plan.fp8;
  model_options.keep_narrow = args.plan.keep_narrow;
  std::optional<ModelPlan> model_plan;
  LoadPlan generic_plan;
  if (find_model_family(*ckpt) != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(model_plan, plan_model(*ckpt, model_options));
  } else {
    DIFFUSIOND_ASSIGN_OR_RETURN(generic_plan, plan_load(*ckpt, args.plan));
  }
  const LoadPlan& plan = model_plan ? model_plan->plan : generic_plan;
  const std::string architecture = model_plan ? model_plan->recipe->describe() : "unknown (weights only)";
  if (args.command == "plan") {
    print_checkpoint_plan(*ckpt, plan, architecture, args.json);
    return absl::OkStatus();
  }

  tune_allocator_for_serving();
  int64_t budget_bytes = 0;
  if (args.budget_bytes.has_value()) {
    budget_bytes = *args.budget_bytes;
  } else {
    DIFFUSIOND_ASSIGN_OR_RETURN(MachineMemory machine, probe_machine_memory());
    budget_bytes = default_ram_budget_bytes(machine);
  }
  Budget ram(Device::kCpu, budget_bytes);
  ModelCacheOptions cache_options;
  cache_options.ram_budget = &ram;
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<ModelCache> cache, ModelCache::create(cache_options));

  const bool tty = ::isatty(STDERR_FILENO) != 0;
  int last_percent = -1;
  StreamOptions stream;
  stream.on_progress = [&](const LoadProgress& p) {
    const int percent = p.total_bytes > 0 ? static_cast<int>(100 * p.bytes_read / p.total_bytes) : 100;
    if (percent / 10 == last_percent / 10 && p.tensors_done != p.total_tensors) return;
    last_percent = percent;
    std::fprintf(stderr, "%sloading %3d%%  %s of %s, %lld/%lld tensors%s", tty ? "\r" : "",
                 percent, format_bytes(p.bytes_read).c_str(), format_bytes(p.total_bytes).c_str(),
                 static_cast<long long>(p.tensors_done), static_cast<long long>(p.total_tensors),
                 tty ? "" : "\n");
  };

  DIFFUSIOND_RETURN_IF_ERROR(reset_peak_rss());
  DIFFUSIOND_ASSIGN_OR_RETURN(ProcessMemory before, read_process_memory());
  int64_t reused_bytes = 0;
  const auto load_as = [&](const std::string& key) {
    reused_bytes = 0;
    StreamOptions counted = stream;
    counted.on_progress = [&](const LoadProgress& p) {
      reused_bytes = p.reused_bytes;
      stream.on_progress(p);
    };
    return cache->get_or_load(key, [&]() -> absl::StatusOr<LoadedValue> {
      if (model_plan.has_value()) return load_planned_model(*ckpt, *model_plan, *cache, counted);
      return load_weights(*ckpt, plan, *cache, counted);
    });
  };
  absl::Time start = absl::Now();
  absl::StatusOr<Pin> pin = load_as(ckpt->path());
  double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::vector<double> switch_seconds;
  for (int i = 1; i <= args.switches && pin.ok(); ++i) {
    *pin = Pin();  // unpinned, so the next load may evict it
    start = absl::Now();
    pin = load_as(i % 2 == 1 ? absl::StrCat(ckpt->path(), " (switch)") : ckpt->path());
    switch_seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    if (pin.ok()) {
      std::fprintf(stderr, "switch %d: %.2f s, %s of the evicted copy's memory reused\n", i, switch_seconds.back(),
                   format_bytes(reused_bytes).c_str());
    }
  }
  if (tty) std::fprintf(stderr, "\n");
  if (!pin.ok()) return pin.status();
  DIFFUSIOND_ASSIGN_OR_RETURN(ProcessMemory after, read_process_memory());
  const WeightStore* store = model_plan.has_value() ? &pin->as<LoadedModel>()->model().weights()
                                                    : &pin->as<CachedWeights>()->store();
  const BudgetSnapshot budget = ram.snapshot();

  std::printf("loaded %s in %.2f s: %lld tensors (%lld FP8), %s accounted, reservation %s\n",
              ckpt->path().c_str(), seconds, static_cast<long long>(store->size()),
              static_cast<long long>(store->fp8_count()), format_bytes(store->nbytes()).c_str(),
              format_bytes(plan.reservation_bytes()).c_str());
  std::printf("RSS before %s, peak +%s, after +%s\n", format_bytes(before.rss_bytes).c_str(),
              format_bytes(after.peak_rss_bytes - before.rss_bytes).c_str(),
              format_bytes(after.rss_bytes - before.rss_bytes).c_str());
  if (args.json) {
    nlohmann::json j = plan_json(plan);
    j["path"] = ckpt->path();
    j["architecture"] = architecture;
    j["accounted_bytes"] = store->nbytes();
    j["committed_bytes"] = budget.committed_bytes;
    j["budget_bytes"] = budget.capacity_bytes;
    j["tensors"] = store->size();
    j["fp8_tensors"] = store->fp8_count();
    j["seconds"] = seconds;
    j["rss_before_bytes"] = before.rss_bytes;
    j["peak_rss_delta_bytes"] = after.peak_rss_bytes - before.rss_bytes;
    j["rss_delta_bytes"] = after.rss_bytes - before.rss_bytes;
    if (args.switches > 0) {
      j["switch_seconds"] = switch_seconds;
      j["switch_reused_bytes"] = reused_bytes;  // the last switch's
    }
    std::printf("%s\n", j.dump().c_str());
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace diffusiond

int main(int argc, char** argv) {
  // Before any BLAS call: a load's casts and `load`'s figures must not run
  // on OpenBLAS's generic fallback kernels.
  const diffusiond::BlasChoice blas = diffusiond::ensure_blas_kernels(argv);
  if (blas.fallback || blas.chosen_by == "diffusiond") std::fprintf(stderr, "blas: %s\n", blas.summary.c_str());
  absl::StatusOr<diffusiond::Args> args = diffusiond::parse_args(argc, argv);
  if (!args.ok()) {
    std::fprintf(stderr, "diffusiond-checkpoint: %s\n%s", std::string(args.status().message()).c_str(),
                 diffusiond::kUsage);
    return 2;
  }
  const absl::Status s = diffusiond::run(*args);
  if (!s.ok()) {
    std::fprintf(stderr, "diffusiond-checkpoint: %s: %s\n",
                 absl::StatusCodeToString(s.code()).c_str(), std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
