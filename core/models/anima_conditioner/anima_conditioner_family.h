// The AnimaTextConditioner ModelFamily: recognises the text_conditioner/
// folder (and its FP8 twin) by its config's class, and the LLM adapter
// inside Anima's community single file ("net.llm_adapter."). That file is
// the Cosmos family's too, and plain loads of it give the denoiser; a load
// naming a config of class AnimaTextConditioner (even one holding only
// the class: every other field is inferred or Anima's default) gives this
// model, reading only the adapter's tensors.
#ifndef DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_FAMILY_H_

#include "core/models/model_family.h"

namespace diffusiond {

// The process-wide instance.
const ModelFamily* anima_conditioner_family();

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_FAMILY_H_
