#include "core/memory/device.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kDeviceNames[] = {"cpu", "cuda"};
static_assert(sizeof(kDeviceNames) / sizeof(kDeviceNames[0]) == kNumDevices,
              "one name per Device");

}  // namespace

absl::string_view device_name(Device device) {
  return kDeviceNames[static_cast<int>(device)];
}

}  // namespace diffusiond
