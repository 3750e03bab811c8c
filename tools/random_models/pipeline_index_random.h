// What every random pipeline folder has beside its components:
// model_index.json (the pipeline's class, each component's library and
// class, the settings its __init__ registers), or a modular pipeline's
// modular_model_index.json, and the scheduler's
// scheduler/scheduler_config.json.
//
// Not here: the components (each architecture's *_random.h).
#ifndef DIFFUSIOND_TOOLS_RANDOM_MODELS_PIPELINE_INDEX_RANDOM_H_
#define DIFFUSIOND_TOOLS_RANDOM_MODELS_PIPELINE_INDEX_RANDOM_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/denoise/flow_match_schedule.h"

namespace diffusiond {

struct PipelineIndexComponent {
  std::string name;     // the subfolder, e.g. "text_encoder"
  std::string library;  // "transformers" or "diffusers"
  std::string class_name;
};

struct PipelineIndexSpec {
  std::string class_name;  // model_index.json's _class_name
  std::vector<PipelineIndexComponent> components;  // the scheduler is added
  // Registered settings (Krea 2's text_encoder_select_layers), written
  // after the components.
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  // scheduler/scheduler_config.json (a FlowMatchEulerDiscreteScheduler's:
  // flow_match_scheduler_config).
  nlohmann::ordered_json scheduler;
  // A modular pipeline's blocks (AnimaModularPipeline's AnimaAutoBlocks).
  // Set: the index is modular_model_index.json as the pipeline's
  // save_config writes it, each component a [library, class, spec] triple
  // whose spec names its subfolder. Empty (the default): model_index.json.
  std::string blocks_class_name;
};

// Returns the FlowMatchEulerDiscreteScheduler config that
// parse_scheduler_config reads back as `schedule`'s shift fields (static
// or dynamic shift, its bounds, shift_terminal).
nlohmann::ordered_json flow_match_scheduler_config(const ScheduleOptions& schedule);

// Writes the index (model_index.json, or modular_model_index.json) and
// scheduler/scheduler_config.json into `folder` (created). UNAVAILABLE if
// they cannot be written.
absl::Status write_pipeline_index(const std::string& folder, const PipelineIndexSpec& spec);

// True when `folder` holds an index file (either name): the writers write
// it last, so a folder without one is unfinished.
bool pipeline_index_written(const std::string& folder);

}  // namespace diffusiond

#endif  // DIFFUSIOND_TOOLS_RANDOM_MODELS_PIPELINE_INDEX_RANDOM_H_
