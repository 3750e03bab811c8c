// What a request's `pipeline` names: a pipeline folder in the models
// directory, read through its model_index.json to the family serving its
// class, or (where a request allows it) a pipeline family by its name.
//
// Not here: parsing model_index.json (pipeline_index.h) or the registry of
// families (pipeline_family.h).
#ifndef DIFFUSIOND_CORE_PIPELINE_PIPELINE_FOLDER_H_
#define DIFFUSIOND_CORE_PIPELINE_PIPELINE_FOLDER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/pipeline_index.h"

namespace diffusiond {

struct PipelineFolder {
  const PipelineFamily* family = nullptr;  // serves index.pipeline_class
  PipelineIndex index;
};

// Reads the model_index.json of folder `pipeline` (relative to `models_dir`,
// confined to it) and finds the family serving its class. INVALID_ARGUMENT
// for a folder without model_index.json, a malformed one, or a class no
// family serves (naming those served); resolve_confined_path's errors
// otherwise (NOT_FOUND for a missing folder).
absl::StatusOr<PipelineFolder> open_pipeline_folder(const std::string& models_dir, const std::string& pipeline);

// What a request's `pipeline` chose: a family, and the folder's
// model_index.json when it named a folder.
struct PipelineChoice {
  const PipelineFamily* family = nullptr;
  std::optional<PipelineIndex> folder;  // empty when a family was named
};

// Returns the family named `pipeline` ("z-image"), else that of the
// pipeline folder at that path with its index. Errors as
// pipeline_family_of.
absl::StatusOr<PipelineChoice> choose_pipeline(const std::string& models_dir, const std::string& pipeline);

// Returns the family named `pipeline` ("z-image"), else that of the
// pipeline folder at that path. INVALID_ARGUMENT naming the families when
// it is neither a family's name nor a path that exists;
// open_pipeline_folder's errors for a path that is no pipeline folder.
absl::StatusOr<const PipelineFamily*> pipeline_family_of(const std::string& models_dir, const std::string& pipeline);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_PIPELINE_FOLDER_H_
