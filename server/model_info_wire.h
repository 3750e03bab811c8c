// core's ModelInfo and LoadProgress as the API's diffusiond.v1 messages.
#ifndef DIFFUSIOND_SERVER_MODEL_INFO_WIRE_H_
#define DIFFUSIOND_SERVER_MODEL_INFO_WIRE_H_

#include "core/engine/engine.h"
#include "diffusiond/v1/model_service.pb.h"

namespace diffusiond {

void to_wire(const ModelInfo& info, v1::ModelInfo* wire);
void to_wire(const LoadProgress& progress, v1::LoadProgress* wire);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_MODEL_INFO_WIRE_H_
