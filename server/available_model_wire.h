// core's CatalogListing as the API's diffusiond.v1.ListAvailableResponse.
#ifndef DIFFUSIOND_SERVER_AVAILABLE_MODEL_WIRE_H_
#define DIFFUSIOND_SERVER_AVAILABLE_MODEL_WIRE_H_

#include "core/catalog/model_catalog.h"
#include "core/precision/compute_dtype.h"
#include "diffusiond/v1/model_service.pb.h"

namespace diffusiond {

// `compute_dtype`: what the listing's sizes were planned at.
void to_wire(const CatalogListing& listing, ComputeDtype compute_dtype, v1::ListAvailableResponse* wire);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_AVAILABLE_MODEL_WIRE_H_
