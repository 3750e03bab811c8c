// ModelCatalog: what under the models directory could be loaded — each
// candidate (a single .safetensors file, ComfyUI scaled-fp8 or not; a
// diffusers or transformers model folder with one weights file or shards; a
// diffusers pipeline folder with model_index.json) with its architecture,
// role, layout and the RAM its load would reserve with FP8 storage off and
// on, planned from headers and config alone as `diffusiond-checkpoint plan`
// does (no tensor data is read). A .safetensors file no model recipe takes
// is tried as a LoRA adapter (core/lora) for every architecture with LoRA
// rules, and listed as one when its keys map.
//
// Confined like loads: a symlink whose target lies outside the models
// directory is neither followed nor listed. Bounded: the walk stops at
// `max_depth` folders down and after `max_entries` directory entries, and
// says so. Cached: a candidate is planned again only when its fingerprint
// changes (the modification time and size of every file its plan reads);
// each list() walks the tree again (stat only) and reuses the rest.
//
// Not here: loading (core/engine), the wire (server/model_service.cc).
#ifndef DIFFUSIOND_CORE_CATALOG_MODEL_CATALOG_H_
#define DIFFUSIOND_CORE_CATALOG_MODEL_CATALOG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/pipeline/pipeline_family.h"
#include "core/precision/compute_dtype.h"
#include "core/precision/precision_policy.h"
#include "core/util/mutex.h"

namespace diffusiond {

// The plan of one candidate at one FP8 setting.
struct AvailableSize {
  std::optional<Fp8Format> fp8;   // empty: FP8 storage off
  int64_t reservation_bytes = 0;  // what a load reserves: final + staging
  int64_t final_bytes = 0;        // what the loaded model holds
  int64_t fp8_tensors = 0;
};

// A LoRA adapter file (core/lora), as planned from its header for every
// architecture with LoRA rules.
struct AvailableAdapter {
  std::string layout;                      // lora_format_name: "diffusers", "kohya", "comfyui"
  std::vector<std::string> architectures;  // every one its keys map onto, sorted
  int64_t modules = 0;                     // of the denoiser, for the first architecture
  int64_t text_encoder_modules = 0;        // kept, not applied
  int64_t min_rank = 0, max_rank = 0;
  // The first architecture's linears it updates (the project's names),
  // sorted; at most kMaxListedTargets, `modules` counting them all.
  std::vector<std::string> targets;
};
inline constexpr size_t kMaxListedTargets = 64;

struct AvailableModel {
  enum class Format { kSingleFile, kScaledFp8File, kModelFolder, kShardedFolder, kPipeline, kLora };
  std::string path;  // relative to the models directory: what LoadModel / Generate take
  Format format = Format::kSingleFile;
  // Empty when it is not loadable (`error` says why); a pipeline's family
  // name for a pipeline folder.
  std::string architecture;
  std::string role;         // "denoiser", "text-encoder", "vae"; "pipeline" for a pipeline folder
  std::string description;  // the recipe's one line, or the pipeline's class
  int64_t file_bytes = 0;   // the weights files' size (a pipeline: its components')
  int64_t tensors = 0;
  // At the catalog's compute dtype: FP8 off, then each FP8 format. A
  // pipeline's are the sums over its components.
  std::vector<AvailableSize> sizes;
  // Pipelines: the components (model_index.json names), each loadable as
  // "<path>/<component>".
  std::vector<std::string> components;
  // Pipelines: the Generate arguments its family takes, with their
  // defaults and meanings (PipelineFamily::arguments).
  std::vector<FamilyArgument> arguments;
  // LoRA files (format kLora, role "adapter"): what the adapter holds. Its
  // `sizes` has one entry: the bytes it holds loaded at the compute dtype.
  std::optional<AvailableAdapter> adapter;
  // Why it cannot be loaded (its recogniser's or plan's error); empty when it can.
  std::string error;
};
absl::string_view available_format_name(AvailableModel::Format format);

struct CatalogListing {
  std::vector<AvailableModel> models;  // by path
  // The walk stopped early: at the depth limit or the entry limit.
  bool truncated = false;
  std::string truncated_reason;  // empty unless truncated
  int64_t entries_scanned = 0;
  int64_t planned = 0;  // candidates planned afresh by this listing (the rest came from the cache)
};

struct CatalogOptions {
  std::string models_dir;
  ComputeDtype compute_dtype = ComputeDtype::kFloat32;
  // FP8 formats planned besides FP8 off.
  std::vector<Fp8Format> fp8_formats = {Fp8Format::kE4M3Fn};
  int max_depth = 6;            // folders below the models directory
  int64_t max_entries = 20000;  // directory entries examined per listing
};

// Thread-safe; one listing runs at a time.
class ModelCatalog {
 public:
  explicit ModelCatalog(CatalogOptions options) : options_(std::move(options)) {}

  // FAILED_PRECONDITION when the models directory cannot be read.
  absl::StatusOr<CatalogListing> list();
  // The dtype the sizes are planned at.
  ComputeDtype compute_dtype() const { return options_.compute_dtype; }

 private:
  struct Cached {
    std::string fingerprint;
    AvailableModel model;
  };
  const CatalogOptions options_;
  Mutex mu_;
  std::map<std::string, Cached> cache_ ABSL_GUARDED_BY(mu_);  // by canonical path
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CATALOG_MODEL_CATALOG_H_
