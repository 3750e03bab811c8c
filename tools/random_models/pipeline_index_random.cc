#include "tools/random_models/pipeline_index_random.h"

#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"

namespace diffusiond {

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
  nlohmann::ordered_json index;
  index["_class_name"] = spec.class_name;
  index["scheduler"] = {"diffusers", spec.scheduler.value("_class_name", "FlowMatchEulerDiscreteScheduler")};
  for (const PipelineIndexComponent& c : spec.components) index[c.name] = {c.library, c.class_name};
  for (const auto& [key, value] : spec.settings.items()) index[key] = value;
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/model_index.json", index.dump(2) + "\n"));
  return write_text_file(folder + "/scheduler/scheduler_config.json", spec.scheduler.dump(2) + "\n");
}

}  // namespace diffusiond
