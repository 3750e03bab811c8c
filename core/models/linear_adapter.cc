#include "core/models/linear_adapter.h"

namespace diffusiond {
namespace {

// Trivially destructible (STYLE: no global state with teardown).
thread_local const LinearAdapterScope* current_scope = nullptr;

}  // namespace

LinearAdapterScope::LinearAdapterScope(const Model& model, const LinearAdapter& adapter)
    : model_(&model), adapter_(&adapter), previous_(current_scope) {
  current_scope = this;
}

LinearAdapterScope::~LinearAdapterScope() { current_scope = previous_; }

const LinearAdapter* LinearAdapterScope::current_for(const Model* model) {
  for (const LinearAdapterScope* s = current_scope; s != nullptr; s = s->previous_) {
    if (s->model_ == model) return s->adapter_;
  }
  return nullptr;
}

}  // namespace diffusiond
