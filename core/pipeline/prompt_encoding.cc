#include "core/pipeline/prompt_encoding.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/describe_model.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/pipeline_folder.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// "text_encoder (qwen3), text_encoder_2 (t5)": `family`'s text encoders.
std::string text_encoders_of(const PipelineFamily& family) {
  std::vector<std::string> names;
  for (const PipelineComponent& c : family.components()) {
    if (c.role != ModelRole::kTextEncoder) continue;
    names.push_back(absl::StrCat(c.name, " (", c.architecture,
                                 c.conditions_denoiser ? ")" : ", read by its text conditioner: not for EncodePrompt)"));
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

// The one component of `all` (every family's text encoders of the
// encoder's architecture) that is the encoder, among those of `named` (null:
// of any family).
absl::StatusOr<EncoderComponent> choose_component(const std::vector<EncoderComponent>& all, const PipelineFamily* named,
                                                  const ModelInfo& encoder) {
  std::vector<EncoderComponent> candidates;
  for (const EncoderComponent& c : all) {
    if (named == nullptr || c.family == named) candidates.push_back(c);
  }
  const std::string what = absl::StrCat("model \"", bounded(encoder.model_id), "\" (", encoder.architecture, ")");
  if (candidates.empty()) {
    if (named != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is not a text encoder of the ", named->name(),
                                                     " pipeline, whose text encoders are ", text_encoders_of(*named)));
    }
    return absl::FailedPreconditionError(absl::StrCat(what, " is not a text encoder of any pipeline served"));
  }
  std::vector<std::string> families;
  for (const EncoderComponent& c : candidates) {
    const std::string name(c.family->name());
    if (std::find(families.begin(), families.end(), name) == families.end()) families.push_back(name);
  }
  if (families.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is a text encoder of several pipeline families (",
                                                   absl::StrJoin(families, ", "),
                                                   "): pass `pipeline` to say whose encoding to use"));
  }
  if (candidates.size() > 1) {
    std::vector<std::string> names;
    for (const EncoderComponent& c : candidates) names.push_back(c.component);
    return absl::InvalidArgumentError(absl::StrCat("the ", families[0], " pipeline has several text encoders of ",
                                                   encoder.architecture, " (", absl::StrJoin(names, ", "),
                                                   "): EncodePrompt cannot tell which one ", what, " is"));
  }
  return candidates[0];
}

}  // namespace

absl::StatusOr<EncodedPrompt> encode_prompt(EngineApi& engine, const std::string& models_dir,
                                            const PromptRequest& request, const GenerateOptions& options) {
  if (request.prompt.size() > kGenerateMaxPromptBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a prompt may hold at most ", kGenerateMaxPromptBytes, " bytes, got ", request.prompt.size()));
  }
  PipelineChoice chosen_pipeline;
  if (!request.pipeline.empty()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(chosen_pipeline, choose_pipeline(models_dir, request.pipeline));
  }
  const PipelineFamily* named = chosen_pipeline.family;
  // The family is chosen from the encoder's description, before it loads.
  ModelLoadRequest load;
  load.path = request.text_encoder;
  DIFFUSIOND_ASSIGN_OR_RETURN(const ModelInfo described, describe_model(engine, load));
  DIFFUSIOND_ASSIGN_OR_RETURN(const EncoderComponent chosen,
                              choose_component(find_encoder_components(described.architecture), named, described));
  const PipelineIndex* folder = chosen_pipeline.folder.has_value() ? &*chosen_pipeline.folder : nullptr;
  DIFFUSIOND_ASSIGN_OR_RETURN(const TextEncoding encoding,
                              chosen.family->folder_text_encoding(chosen.component, request.prompt, folder));
  DIFFUSIOND_ASSIGN_OR_RETURN(const ModelHandle encoder,
                              ready_component(engine, load, ModelRole::kTextEncoder, options));
  DIFFUSIOND_ASSIGN_OR_RETURN(CallResult<EncodedText> called, engine.encode_text(encoder, encoding, options.cancel));
  report_call(options, encoder.id(), called.report, absl::StrCat("the encoding of ", encoder.id()));
  const EncodedText& encoded = called.value;
  EncodedPrompt out;
  out.tokens = encoded.tokens;
  DIFFUSIOND_ASSIGN_OR_RETURN(out.conditioning, chosen.family->encoder_conditioning(chosen.component, encoded));
  return out;
}

absl::StatusOr<EncodedPrompt> encode_prompt(EngineApi& engine, const std::string& id_or_path, const std::string& prompt,
                                            const GenerateOptions& options) {
  PromptRequest request;
  request.text_encoder = id_or_path;
  request.prompt = prompt;
  return encode_prompt(engine, /*models_dir=*/"", request, options);
}

}  // namespace diffusiond
