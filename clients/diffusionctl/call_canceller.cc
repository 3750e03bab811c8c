#include "clients/diffusionctl/call_canceller.h"

namespace diffusiond::ctl {

void CallCanceller::cancel() {
  MutexLock lock(&mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

bool CallCanceller::cancelled() const {
  MutexLock lock(&mu_);
  return cancelled_;
}

CallCanceller::Scope::Scope(CallCanceller* canceller, grpc::ClientContext* context)
    : canceller_(canceller) {
  if (canceller_ == nullptr) return;
  MutexLock lock(&canceller_->mu_);
  canceller_->context_ = context;
  // gRPC remembers a cancel made before the call starts and applies it then.
  if (canceller_->cancelled_) context->TryCancel();
}

CallCanceller::Scope::~Scope() {
  if (canceller_ == nullptr) return;
  MutexLock lock(&canceller_->mu_);
  canceller_->context_ = nullptr;
}

}  // namespace diffusiond::ctl
