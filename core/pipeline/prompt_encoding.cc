#include "core/pipeline/prompt_encoding.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/pipeline/pipeline_family.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<EncodedPrompt> encode_prompt(EngineApi& engine, const std::string& id_or_path,
                                            const std::string& prompt, const GenerateOptions& options) {
  if (prompt.size() > kGenerateMaxPromptBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a prompt may hold at most ", kGenerateMaxPromptBytes, " bytes, got ", prompt.size()));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::string id, ready_component(engine, id_or_path, options));
  std::string architecture;
  for (const ModelInfo& m : engine.list()) {
    if (m.model_id == id) architecture = m.architecture;
  }
  std::string component;
  const PipelineFamily* family = find_pipeline_family_for_encoder(architecture, &component);
  if (family == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("model \"", bounded(id), "\" (", architecture,
                                                      ") is not a text encoder of any pipeline served"));
  }
  std::vector<std::string> evicted;
  DIFFUSIOND_ASSIGN_OR_RETURN(
      EncodedText encoded,
      engine.encode_text(id, family->text_encoding(component, prompt), options.cancel, &evicted));
  EncodedPrompt out;
  out.tokens = encoded.tokens;
  DIFFUSIOND_ASSIGN_OR_RETURN(out.conditioning, family->encoder_conditioning(component, encoded));
  return out;
}

}  // namespace diffusiond
