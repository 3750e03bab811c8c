// libFuzzer target for the model config parsers, along the path of
// `diffusiond-checkpoint plan-config`: the family a config.json names, its
// recipe (config parsed, bounded and validated, parameter table built),
// and the load plan over that table; every family's recipe for the same
// bytes; a VAE's decode activations (AutoencoderKL's and the causal 3-D
// VAE's); and scheduler_config.json.
//
// Bad input must give a Status whose message is bounded, never a crash or
// a sanitizer report. Memory must stay proportional to the input, not to
// the numbers in it: run with -malloc_limit_mb and -rss_limit_mb
// (deploy/fuzz.sh config), which turn a table sized by a declared count
// into a finding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/denoise/scheduler_config.h"
#include "core/loader/declared_exclusions.h"
#include "core/loader/load_plan.h"
#include "core/models/model_family.h"
#include "core/models/model_loader.h"
#include "core/models/vae/vae_config.h"
#include "core/models/vae/vae_memory.h"
#include "core/models/vae/vae_tiling.h"
#include "core/models/wan_vae/wan_vae_config.h"
#include "core/models/wan_vae/wan_vae_memory.h"
#include "core/util/json.h"

namespace diffusiond {
namespace {

// Status messages reach clients (a LoadModel's config_path); values from
// the file are quoted at most 200 bytes at a time.
constexpr size_t kMaxMessageBytes = 1024;

void check_bounded(const absl::Status& s) {
  if (s.message().size() > kMaxMessageBytes) __builtin_trap();
}

// What plan-config does with a recipe: the parameter table as bf16
// records, planned as a load with FP8 on (the declaration's patterns run),
// then the declaration's own exclusions. A table whose sizes overflow is
// the recipe's bug: its config bounds must refuse such a config first.
void plan(std::unique_ptr<LoadRecipe> recipe) {
  (void)recipe->describe();
  ModelLoadOptions options;
  options.fp8.format = Fp8Format::kE4M3Fn;
  absl::StatusOr<ConfigPlan> planned = plan_model_config(std::move(recipe), options, "config.json");
  if (!planned.ok() && absl::StrContains(planned.status().message(), "has no valid size")) __builtin_trap();
  check_bounded(planned.status());
  if (planned.ok()) (void)declared_exclusions(planned->plan, planned->options);
}

void fuzz_one(const uint8_t* data, size_t size) {
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  if (const ModelFamily* family = find_family_for_config(json)) {
    absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = family->recipe_for_config(json, "config.json");
    check_bounded(recipe.status());
    if (recipe.ok()) plan(*std::move(recipe));
  }
  // Each family's parser on the same bytes, whatever class they name.
  for (const ModelFamily* family : model_families()) {
    check_bounded(family->recipe_for_config(json, "config.json").status());
  }
  if (absl::StatusOr<VaeConfig> vae = parse_vae_config(json, "config.json"); vae.ok()) {
    for (int64_t side : {512, 1024, 2048}) {
      const int64_t h = side / vae->scale_factor();
      (void)vae_decode_activation_bytes(*vae, 1, h, h, 2, std::nullopt);
      (void)vae_decode_activation_bytes(*vae, 1, h, h, 2, default_vae_tiling(*vae));
    }
  } else {
    check_bounded(vae.status());
  }
  if (absl::StatusOr<nlohmann::json> root = parse_json_strict(json, "config.json"); root.ok()) {
    absl::StatusOr<WanVaeConfig> video = wan_vae_config_from_json(*root, "config.json");
    check_bounded(video.status());
    if (video.ok()) {
      const int64_t f = video->spatial_factor();
      (void)wan_vae_decode_activation_bytes(*video, 1, 21, 480 / f, 832 / f, 2, std::nullopt);
      (void)wan_vae_decode_activation_bytes(*video, 1, 3, 1024 / f, 1024 / f, 2, WanVaeTiling());
      (void)wan_vae_encode_activation_bytes(*video, 1, 9, 480, 832, 2, WanVaeTiling());
    }
  }
  check_bounded(parse_scheduler_config(json, "scheduler_config.json", ScheduleOptions{}).status());
}

}  // namespace
}  // namespace diffusiond

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  diffusiond::fuzz_one(data, size);
  return 0;
}
