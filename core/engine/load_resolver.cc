#include "core/engine/load_resolver.h"

#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/engine/adapter_admission.h"
#include "core/precision/torch_dtype.h"
#include "core/util/bounded_text.h"
#include "core/util/confined_path.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

std::string fp8_name(const std::optional<Fp8Format>& f) { return f.has_value() ? fp8_format_name(*f) : "off"; }

// " with FP8 X (asked: Y)" and " at D (asked: E)" for what differs.
std::string option_differences(const std::optional<Fp8Format>& loaded_fp8, const std::optional<Fp8Format>& asked_fp8,
                               ComputeDtype loaded_dtype, ComputeDtype asked_dtype) {
  std::string differs;
  if (loaded_fp8 != asked_fp8) {
    absl::StrAppend(&differs, " with FP8 ", fp8_name(loaded_fp8), " (asked: ", fp8_name(asked_fp8), ")");
  }
  if (loaded_dtype != asked_dtype) {
    absl::StrAppend(&differs, " at ", compute_dtype_name(loaded_dtype), " (asked: ", compute_dtype_name(asked_dtype),
                    ")");
  }
  return differs;
}

absl::Status already_loaded_otherwise(const std::string& model_id, const std::string& differs) {
  return absl::FailedPreconditionError(absl::StrCat("model \"", bounded(model_id), "\" is already loaded", differs,
                                                    "; unload it first or load under another model_id"));
}

}  // namespace

int64_t least_call_bytes(const LoadRecipe* recipe, ComputeDtype dtype, ActivationQuery query, bool on_device) {
  if (recipe == nullptr || on_device) return 0;
  query.compute_dtype = to_scalar_type(dtype);
  return recipe->least_call_bytes(query);
}

std::string LoadResolver::relative_to_models_dir(const std::string& path) const {
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::canonical(options_.models_dir, ec);
  const std::filesystem::path relative = std::filesystem::path(path).lexically_relative(root);
  return ec || relative.empty() ? path : relative.string();
}

absl::StatusOr<ResolvedLoad> LoadResolver::resolve(const ModelLoadRequest& request) const {
  if (request.path.empty()) return absl::InvalidArgumentError("a load needs a path");
  ResolvedLoad load;
  DIFFUSIOND_ASSIGN_OR_RETURN(load.path, resolve_confined_path(options_.models_dir, request.path));
  // Without an id the model is known by its canonical path inside the
  // models directory, so "demo", "./demo" and "/models/demo" are one model.
  load.model_id = request.model_id.empty() ? relative_to_models_dir(load.path) : request.model_id;
  // Adapters are cached under keys of their own (adapter_admission.h).
  if (is_adapter_key(load.model_id)) {
    return absl::InvalidArgumentError(absl::StrCat("model id \"", bounded(load.model_id), "\" starts with \"",
                                                   kAdapterKeyPrefix, "\", which names adapters"));
  }
  if (!request.config_path.empty()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(load.config_path, resolve_confined_path(options_.models_dir, request.config_path));
  }
  load.fp8 = request.fp8.value_or(options_.fp8);
  load.compute_dtype = request.compute_dtype.value_or(options_.compute_dtype);
  return load;
}

absl::StatusOr<OpenedLoad> LoadResolver::open_and_plan(const ResolvedLoad& load) const {
  OpenOptions open;
  open.config_path = load.config_path;
  open.opener = options_.file_opener;
  OpenedLoad opened;
  DIFFUSIOND_ASSIGN_OR_RETURN(opened.checkpoint, Checkpoint::open(load.path, open));
  ModelLoadOptions lo;
  lo.compute_dtype = to_scalar_type(load.compute_dtype);
  lo.fp8 = load.fp8;
  lo.keep_narrow = options_.keep_narrow_weights;
  DIFFUSIOND_ASSIGN_OR_RETURN(opened.plan, plan_model(*opened.checkpoint, lo));
  return opened;
}

absl::Status check_load_options(const ModelInfo& loaded, const ModelLoadRequest& asked) {
  const std::string differs =
      option_differences(loaded.fp8, asked.fp8.has_value() ? asked.fp8->format : loaded.fp8, loaded.compute_dtype,
                         asked.compute_dtype.value_or(loaded.compute_dtype));
  if (differs.empty()) return absl::OkStatus();
  return already_loaded_otherwise(loaded.model_id, differs);
}

absl::Status LoadResolver::check_matches(const ResolvedLoad& load, const ModelDescription& loaded) const {
  // A config_path named again is compared by content, like the other
  // options: a cache hit must not answer OK with a model built from
  // another config.
  std::string differs;
  if (!load.config_path.empty()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(const std::string text, read_text_file(load.config_path));
    DIFFUSIOND_RETURN_IF_ERROR(parse_json_strict(text, load.config_path).status());
    if (config_digest(text) != loaded.config_digest) {
      differs = absl::StrCat(" with config ", loaded.config_path.empty() ? "(none)" : loaded.config_path,
                             " (asked: ", load.config_path, ", other content)");
    }
  }
  if (loaded.path != load.path) absl::StrAppend(&differs, " from ", loaded.path, " (asked: ", load.path, ")");
  absl::StrAppend(&differs,
                  option_differences(loaded.fp8, load.fp8.format, loaded.compute_dtype, load.compute_dtype));
  if (differs.empty()) return absl::OkStatus();
  return already_loaded_otherwise(load.model_id, differs);
}

absl::StatusOr<ModelInfo> LoadResolver::describe(const ResolvedLoad& load) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(const OpenedLoad opened, open_and_plan(load));
  const ModelPlan& plan = opened.plan;
  ModelInfo info;
  info.model_id = load.model_id;
  info.path = load.path;
  info.architecture = std::string(plan.family->name());
  info.description = plan.recipe->describe();
  info.role = plan.family->role();
  info.geometry = plan.recipe->latent_geometry();
  info.compute_dtype = load.compute_dtype;
  info.bytes[kCpuIndex] = plan.plan.reservation_bytes();
  return info;
}

absl::StatusOr<CallFloor> LoadResolver::least_call_room(const ResolvedLoad& load, const ActivationQuery& query,
                                                        bool on_device) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(const OpenedLoad opened, open_and_plan(load));
  return CallFloor{opened.plan.plan.final_bytes,
                   least_call_bytes(opened.plan.recipe.get(), load.compute_dtype, query, on_device)};
}

ModelLoadRequest LoadResolver::reload_of(const ModelInfo& info) const {
  ModelLoadRequest reload;
  reload.path = info.path;
  reload.model_id = info.model_id;
  reload.config_path = info.config_path;
  reload.compute_dtype = info.compute_dtype;
  // The default's scaling where the default's format was used.
  reload.fp8 = info.fp8 == options_.fp8.format ? options_.fp8 : Fp8Options{info.fp8};
  return reload;
}

}  // namespace diffusiond
