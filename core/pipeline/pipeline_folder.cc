#include "core/pipeline/pipeline_folder.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/bounded_text.h"
#include "core/util/confined_path.h"
#include "core/util/file_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<PipelineFolder> open_pipeline_folder(const std::string& models_dir, const std::string& pipeline) {
  DIFFUSIOND_ASSIGN_OR_RETURN(std::string folder, resolve_confined_path(models_dir, pipeline));
  absl::StatusOr<PipelineIndex> index = read_pipeline_index(folder);
  if (absl::IsNotFound(index.status())) {
    return absl::InvalidArgumentError(absl::StrCat("pipeline \"", bounded(pipeline),
                                                   "\" has no model_index.json (or modular_model_index.json): it is "
                                                   "not a pipeline folder"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(index.status());
  PipelineFolder out;
  out.index = *std::move(index);
  out.family = find_pipeline_family(out.index.pipeline_class);
  if (out.family != nullptr) return out;
  std::vector<std::string> served;
  for (const PipelineFamily* f : pipeline_families()) {
    for (const std::string& cls : f->pipeline_classes()) served.push_back(cls);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("pipeline \"", bounded(pipeline), "\" is a ", bounded(out.index.pipeline_class),
                   ", which no pipeline family serves (", absl::StrJoin(served, ", "), ")"));
}

absl::StatusOr<const PipelineFamily*> pipeline_family_of(const std::string& models_dir, const std::string& pipeline) {
  DIFFUSIOND_ASSIGN_OR_RETURN(PipelineChoice chosen, choose_pipeline(models_dir, pipeline));
  return chosen.family;
}

absl::StatusOr<PipelineChoice> choose_pipeline(const std::string& models_dir, const std::string& pipeline) {
  if (const PipelineFamily* named = find_pipeline_family_named(pipeline)) return PipelineChoice{named, std::nullopt};
  absl::StatusOr<PipelineFolder> folder = open_pipeline_folder(models_dir, pipeline);
  if (folder.ok()) return PipelineChoice{folder->family, std::move(folder->index)};
  if (!absl::IsNotFound(folder.status())) return folder.status();
  std::vector<std::string> names;
  for (const PipelineFamily* f : pipeline_families()) names.emplace_back(f->name());
  return absl::InvalidArgumentError(absl::StrCat("pipeline \"", bounded(pipeline), "\" is neither a pipeline family (",
                                                 absl::StrJoin(names, ", "), ") nor a folder in the models directory"));
}

}  // namespace diffusiond
