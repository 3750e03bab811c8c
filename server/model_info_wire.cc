#include "server/model_info_wire.h"

#include "core/precision/compute_dtype.h"

namespace diffusiond {

void to_wire(const ModelInfo& info, v1::ModelInfo* wire) {
  wire->set_model_id(info.model_id);
  wire->set_architecture(info.architecture);
  wire->set_description(info.description);
  wire->set_compute_dtype(compute_dtype_name(info.compute_dtype));
  wire->set_tensors(info.tensors);
  wire->set_fp8_tensors(info.fp8_tensors);
  wire->set_ram_bytes(info.bytes[static_cast<int>(Device::kCpu)]);
  wire->set_vram_bytes(info.bytes[static_cast<int>(Device::kCuda)]);
  wire->set_pins(info.pins);
  wire->set_idle_seconds(absl::ToDoubleSeconds(info.idle));
}

}  // namespace diffusiond
