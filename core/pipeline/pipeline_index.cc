#include "core/pipeline/pipeline_index.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<PipelineIndex> parse_pipeline_index(absl::string_view json, absl::string_view path) {
  DIFFUSIOND_ASSIGN_OR_RETURN(nlohmann::json root, parse_json_strict(json, path));
  if (!root.is_object() || !root.contains("_class_name") || !root.at("_class_name").is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected an object with a \"_class_name\" string"));
  }
  PipelineIndex index;
  index.pipeline_class = root.at("_class_name").get<std::string>();
  for (const auto& [name, value] : root.items()) {
    if (absl::StartsWith(name, "_")) continue;  // metadata
    const bool modular = value.is_array() && value.size() == 3 && value[2].is_object();
    if (value.is_array() && (value.size() == 2 || modular) && value[0].is_null() && value[1].is_null()) {
      continue;  // an absent optional component
    }
    if (!value.is_array() || (value.size() != 2 && !modular) || !value[0].is_string() || !value[1].is_string()) {
      index.settings[name] = value;
      continue;
    }
    if (name.empty() || name == "." || name == ".." || absl::StrContains(name, "/") || absl::StrContains(name, "\\")) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": component name \"", bounded(name), "\" is not a folder name"));
    }
    index.components[name] = value[1].get<std::string>();
  }
  return index;
}

absl::StatusOr<PipelineIndex> read_pipeline_index(const std::string& folder) {
  for (const char* file : kPipelineIndexFiles) {
    const std::string path = absl::StrCat(folder, "/", file);
    absl::StatusOr<std::string> text = read_text_file(path);
    if (absl::IsNotFound(text.status())) continue;
    DIFFUSIOND_RETURN_IF_ERROR(text.status());
    return parse_pipeline_index(*text, path);
  }
  return absl::NotFoundError(absl::StrCat(folder, " has no model_index.json or modular_model_index.json"));
}

}  // namespace diffusiond
