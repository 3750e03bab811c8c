#include "server/available_model_wire.h"

#include <string>

namespace diffusiond {
namespace {

v1::Fp8Mode fp8_mode_of(const std::optional<Fp8Format>& format) {
  if (!format.has_value()) return v1::FP8_MODE_OFF;
  switch (*format) {
    case Fp8Format::kE4M3Fn:
      return v1::FP8_MODE_E4M3FN;
    case Fp8Format::kE5M2:
      return v1::FP8_MODE_E5M2;
  }
  return v1::FP8_MODE_DEFAULT;
}

}  // namespace

void to_wire(const CatalogListing& listing, ComputeDtype compute_dtype, v1::ListAvailableResponse* wire) {
  for (const AvailableModel& m : listing.models) {
    v1::AvailableModel* w = wire->add_models();
    w->set_path(m.path);
    w->set_format(std::string(available_format_name(m.format)));
    w->set_architecture(m.architecture);
    w->set_role(m.role);
    w->set_description(m.description);
    w->set_file_bytes(m.file_bytes);
    w->set_tensors(m.tensors);
    w->set_compute_dtype(compute_dtype_name(compute_dtype));
    for (const AvailableSize& size : m.sizes) {
      v1::AvailableSize* s = w->add_sizes();
      s->set_fp8(fp8_mode_of(size.fp8));
      s->set_reservation_bytes(size.reservation_bytes);
      s->set_final_bytes(size.final_bytes);
      s->set_fp8_tensors(size.fp8_tensors);
    }
    for (const std::string& c : m.components) w->add_components(c);
    for (const FamilyArgument& a : m.arguments) {
      v1::GenerateArgument* arg = w->add_arguments();
      arg->set_name(a.name);
      arg->set_default_value(a.default_value);
      arg->set_meaning(a.meaning);
    }
    if (m.adapter.has_value()) {
      v1::AvailableAdapter* a = w->mutable_adapter();
      a->set_layout(m.adapter->layout);
      for (const std::string& arch : m.adapter->architectures) a->add_architectures(arch);
      a->set_modules(m.adapter->modules);
      a->set_text_encoder_modules(m.adapter->text_encoder_modules);
      a->set_min_rank(m.adapter->min_rank);
      a->set_max_rank(m.adapter->max_rank);
      for (const std::string& t : m.adapter->targets) a->add_targets(t);
    }
    w->set_error(m.error);
  }
  wire->set_truncated(listing.truncated);
  wire->set_truncated_reason(listing.truncated_reason);
  wire->set_entries_scanned(listing.entries_scanned);
}

}  // namespace diffusiond
