#include "core/models/forward_weights.h"

namespace diffusiond {
namespace {

thread_local ForwardWeights* current_source = nullptr;

}  // namespace

ForwardWeights::ForwardWeights(const Model* model) : model_(model), previous_(current_source) {
  current_source = this;
}

ForwardWeights::~ForwardWeights() { current_source = previous_; }

ForwardWeights* ForwardWeights::current_for(const Model* model) {
  for (ForwardWeights* s = current_source; s != nullptr; s = s->previous_) {
    if (s->model_ == model) return s;
  }
  return nullptr;
}

}  // namespace diffusiond
