// One prompt through one text encoder, as the first pipeline family that
// uses that encoder's architecture asks for it (EncodePrompt names only the
// encoder): the conditioning that encoder contributes to its denoiser.
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

struct EncodedPrompt {
  Conditioning conditioning;
  int64_t tokens = 0;  // after the template and truncation
};

// Readies text encoder `id_or_path` (ready_component) and encodes `prompt`.
// FAILED_PRECONDITION when the model is not a text encoder any pipeline
// family uses; INVALID_ARGUMENT for a prompt over kGenerateMaxPromptBytes;
// the engine's errors otherwise.
absl::StatusOr<EncodedPrompt> encode_prompt(EngineApi& engine, const std::string& id_or_path,
                                            const std::string& prompt, const GenerateOptions& options);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_PROMPT_ENCODING_H_
