// A diffusers pipeline folder's model_index.json (or the
// modular_model_index.json a modular pipeline such as AnimaModularPipeline
// saves): which components it has (text_encoder, tokenizer, transformer,
// vae, scheduler, ...), the class each is, and the settings the
// pipeline's __init__ registered.
#ifndef DIFFUSIOND_CORE_PIPELINE_PIPELINE_INDEX_H_
#define DIFFUSIOND_CORE_PIPELINE_PIPELINE_INDEX_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/util/json.h"

namespace diffusiond {

struct PipelineIndex {
  std::string pipeline_class;  // "_class_name", e.g. "ZImagePipeline"
  // Component name (its subfolder) -> its class, e.g. "vae" -> "AutoencoderKL".
  std::map<std::string, std::string> components;
  // Every other entry not starting with "_" (Krea 2's is_distilled and
  // text_encoder_select_layers), as a JSON object; the family reads the
  // ones it has.
  nlohmann::json settings = nlohmann::json::object();
};

// Parses model_index.json text. A component is an entry whose value is a
// [library, class] pair, or in a modular index a [library, class, spec]
// triple (the spec, where upstream would load it from, is not read: the
// component is the folder of its name, where save_pretrained put it); null
// entries (absent optional components) are skipped; every other entry is
// a setting. INVALID_ARGUMENT naming `path` for malformed JSON, a missing
// _class_name, or a component name that is not a plain folder name.
absl::StatusOr<PipelineIndex> parse_pipeline_index(absl::string_view json, absl::string_view path);

// The index files a pipeline folder may hold, in the order they are tried.
inline constexpr const char* kPipelineIndexFiles[] = {"model_index.json", "modular_model_index.json"};

// Reads and parses the first index file of `folder` that exists. NOT_FOUND
// when it has none; the file's read or parse error otherwise.
absl::StatusOr<PipelineIndex> read_pipeline_index(const std::string& folder);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_PIPELINE_INDEX_H_
