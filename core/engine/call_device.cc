#include "core/engine/call_device.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"

namespace diffusiond {

std::string CallDevice::summary() const {
  std::string line = absl::StrCat("on ", device);
  if (plan.empty()) return line;
  absl::StrAppend(&line, ": ", placed ? (replanned ? "re-planned, " : "placed, ") : "", plan);
  for (const std::string& key : evicted) {
    absl::StrAppend(&line, "; evicted the placement of \"", bounded(key), "\" to RAM");
  }
  if (streamed_bytes > 0) absl::StrAppend(&line, "; streamed ", format_bytes(streamed_bytes));
  return line;
}

void CallDevice::add(CallDevice later) {
  device = std::move(later.device);
  plan = std::move(later.plan);
  placed = placed || later.placed;
  replanned = replanned || later.replanned;
  evicted.insert(evicted.end(), later.evicted.begin(), later.evicted.end());
  streamed_bytes += later.streamed_bytes;
}

}  // namespace diffusiond
