// What the services check of a request on gRPC's thread before a tensor is
// built or the engine is asked: every rule that needs neither libtorch nor a
// model. A hostile request costs one pass over its bytes, and nothing is
// allocated in proportion to what it declares; tests/fuzz/wire_fuzz.cc runs
// these checks on arbitrary bytes.
//
// Not here: the conversions to core's types (denoise_service.cc,
// pipeline_service.cc), and what only the model can judge (shapes against
// its config, the latent size against the budget).
#ifndef DIFFUSIOND_SERVER_REQUEST_CHECKS_H_
#define DIFFUSIOND_SERVER_REQUEST_CHECKS_H_

#include "absl/status/status.h"
#include "diffusiond/v1/denoise_service.pb.h"
#include "diffusiond/v1/pipeline_service.pb.h"

namespace diffusiond {

inline constexpr int kDefaultDenoiseSteps = 8;  // steps 0
inline constexpr int kMaxDenoiseSteps = 1000;   // steps and explicit sigmas
inline constexpr int kMaxDenoiseSegments = 8;   // a Denoise's later_segments
// A request's `pipeline`: a path in the models directory (Linux's PATH_MAX)
// or a family's name.
inline constexpr size_t kMaxPipelineBytes = 4096;

// Conditioning tensors; initial_latents (floating, every value finite) or a
// latent_shape; guidance_scale and shift finite and >= 0; steps in [0, 1000];
// at most 1000 sigmas. INVALID_ARGUMENT naming the field and its value.
absl::Status check_denoise_request(const v1::DenoiseRequest& wire);

// The latents: a valid floating tensor, every value finite.
absl::Status check_decode_request(const v1::DecodeRequest& wire);

// No negative width, height or steps (0 asks for the default); a pipeline
// of at most kMaxPipelineBytes. The rest (multiples of 16, at most 1000
// steps, finite guidance) is core's generate() to check, for every caller.
absl::Status check_generate_request(const v1::GenerateRequest& wire);

// A pipeline of at most kMaxPipelineBytes. The prompt's length and which
// family the pipeline names are core's encode_prompt() to check.
absl::Status check_encode_prompt_request(const v1::EncodePromptRequest& wire);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_REQUEST_CHECKS_H_
