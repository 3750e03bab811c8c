#include "tools/random_models/pipeline_index_random.h"

#include <filesystem>

#include "core/pipeline/pipeline_index.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {
namespace {

// A component's entry: [library, class], or in a modular index the triple
// whose spec says where it was saved (its subfolder) and what it is.
nlohmann::ordered_json index_entry(const std::string& name, const std::string& library, const std::string& class_name,
                                   bool modular) {
  if (!modular) return {library, class_name};
  nlohmann::ordered_json spec;
  spec["subfolder"] = name;
  spec["type_hint"] = {library, class_name};
  return {library, class_name, spec};
}

}  // namespace

nlohmann::ordered_json flow_match_scheduler_config(const ScheduleOptions& s) {
  nlohmann::ordered_json j;
  j["_class_name"] = "FlowMatchEulerDiscreteScheduler";
  j["base_image_seq_len"] = s.base_seq_len;
  j["base_shift"] = s.base_shift;
  j["max_image_seq_len"] = s.max_seq_len;
  j["max_shift"] = s.max_shift;
  j["num_train_timesteps"] = 1000;
  j["shift"] = s.shift;
  if (s.shift_terminal > 0) j["shift_terminal"] = s.shift_terminal;
  j["use_dynamic_shifting"] = s.dynamic_shift;
  return j;
}

absl::Status write_pipeline_index(const std::string& folder, const PipelineIndexSpec& spec) {
  const bool modular = !spec.blocks_class_name.empty();
  nlohmann::ordered_json index;
  index["_class_name"] = spec.class_name;
  if (modular) index["_blocks_class_name"] = spec.blocks_class_name;
  index["scheduler"] = index_entry("scheduler", "diffusers",
                                   spec.scheduler.value("_class_name", "FlowMatchEulerDiscreteScheduler"), modular);
  for (const PipelineIndexComponent& c : spec.components) {
    index[c.name] = index_entry(c.name, c.library, c.class_name, modular);
  }
  for (const auto& [key, value] : spec.settings.items()) index[key] = value;
  // The scheduler first: the index, written last, marks a finished folder.
  DIFFUSIOND_RETURN_IF_ERROR(
      write_text_file(folder + "/scheduler/scheduler_config.json", spec.scheduler.dump(2) + "\n"));
  const char* file = modular ? "/modular_model_index.json" : "/model_index.json";
  return write_text_file(folder + file, index.dump(2) + "\n");
}

bool pipeline_index_written(const std::string& folder) {
  for (const char* file : kPipelineIndexFiles) {
    std::error_code error;
    if (std::filesystem::is_regular_file(std::filesystem::path(folder) / file, error)) return true;
  }
  return false;
}

}  // namespace diffusiond
