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
  wire->set_ram_bytes(info.bytes[kCpuIndex]);
  wire->set_vram_bytes(info.bytes[kCudaIndex]);
  wire->set_pins(info.pins);
  wire->set_idle_seconds(absl::ToDoubleSeconds(info.idle));
  wire->set_role(std::string(model_role_name(info.role)));
  for (const ConditioningInput& in : info.conditioning) {
    v1::ConditioningInput* w = wire->add_conditioning();
    w->set_name(in.name);
    w->set_scalar(in.kind == ConditioningInput::Kind::kScalar);
    for (int64_t d : in.shape) w->add_shape(d);
    w->set_required(in.required);
    w->set_default_value(in.default_value);
    w->set_meaning(in.meaning);
  }
  wire->set_supports_negative(info.supports_negative);
  wire->set_vram_plan(info.vram_plan);
  wire->set_vram_streamed_bytes_per_step(info.vram_streamed_bytes_per_step);
}

void to_wire(const LoadProgress& progress, v1::LoadProgress* wire) {
  wire->set_bytes_read(progress.bytes_read);
  wire->set_total_bytes(progress.total_bytes);
  wire->set_tensors_done(progress.tensors_done);
  wire->set_total_tensors(progress.total_tensors);
  wire->set_reused_bytes(progress.reused_bytes);
}

}  // namespace diffusiond
