// One prompt through one text encoder, as a pipeline family asks for it:
// the conditioning that encoder contributes to its family's denoiser.
// EncodePrompt names the encoder and, where its architecture serves more
// than one family, the family (or a pipeline folder of it).
//
// Not here: whole pipelines (generate.h).
#ifndef DIFFUSIOND_CORE_PIPELINE_PROMPT_ENCODING_H_
#define DIFFUSIOND_CORE_PIPELINE_PROMPT_ENCODING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/engine/engine_api.h"
#include "core/models/conditioning.h"
#include "core/pipeline/generate.h"

namespace diffusiond {

struct PromptRequest {
  std::string text_encoder;  // a loaded model's id, or a path to load
  std::string prompt;
  // Whose encoding: a family's name ("z-image", "qwen-image"), or a
  // pipeline folder (model_index.json) relative to the models directory.
  // Empty: the one family with a text encoder of the encoder's
  // architecture.
  std::string pipeline;
};

struct EncodedPrompt {
  Conditioning conditioning;
  int64_t tokens = 0;  // after the template and truncation
};

// Encodes `request.prompt` with its text encoder as the chosen family's
// component of the encoder's architecture asks (ready_component loads it).
// INVALID_ARGUMENT for a prompt over kGenerateMaxPromptBytes, a pipeline
// that names no family (pipeline_family_of), a family without a text
// encoder of that architecture, a family with two of them (naming them),
// or, without a pipeline, an architecture several families use (naming
// them: pass `pipeline`); FAILED_PRECONDITION when the model is not a text
// encoder any family uses; the engine's errors otherwise. Everything but
// the engine's errors is known before the encoder is loaded.
absl::StatusOr<EncodedPrompt> encode_prompt(EngineApi& engine, const std::string& models_dir,
                                            const PromptRequest& request, const GenerateOptions& options);

// encode_prompt() without a pipeline, for callers whose encoder serves one
// family.
absl::StatusOr<EncodedPrompt> encode_prompt(EngineApi& engine, const std::string& id_or_path, const std::string& prompt,
                                            const GenerateOptions& options);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_PROMPT_ENCODING_H_
