// The Cosmos ModelFamily: recognises CosmosTransformer3DModel checkpoints
// as Anima configures it — diffusers folders (transformer/ and its FP8
// twin) and Anima's community single file (original Cosmos-Predict2 names
// under "net.", whose LLM adapter it leaves to the text conditioner).
#ifndef DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* cosmos_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_FAMILY_H_
