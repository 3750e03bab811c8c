// The device tier tests run on: $DIFFUSIOND_TEST_DEVICE ("cuda:N", or "sim"
// for the simulated device), the simulated device when unset. A CUDA device
// this build or machine lacks makes the test skip, naming why.
#ifndef DIFFUSIOND_TESTS_TESTING_TEST_DEVICE_H_
#define DIFFUSIOND_TESTS_TESTING_TEST_DEVICE_H_

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "core/vram/cuda_device.h"
#include "core/vram/sim_device.h"
#include "gtest/gtest.h"

namespace diffusiond::testing {

inline std::string test_device_name() {
  const char* env = std::getenv("DIFFUSIOND_TEST_DEVICE");
  return env != nullptr && *env != '\0' ? env : "sim";
}

// The device, or null with `*skip` saying why there is none.
inline std::unique_ptr<VramDevice> open_test_device(std::string* skip) {
  const std::string name = test_device_name();
  if (name == "sim") {
    SimDeviceOptions o;
    o.capacity_bytes = int64_t{8} << 30;
    return std::make_unique<SimDevice>(o);
  }
  int index = 0;
  if (!absl::StartsWith(name, "cuda:") || !absl::SimpleAtoi(name.substr(5), &index)) {
    *skip = "DIFFUSIOND_TEST_DEVICE=" + name + " is neither sim nor cuda:N";
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<VramDevice>> device = open_cuda_device(index);
  if (!device.ok()) {
    *skip = std::string(device.status().message());
    return nullptr;
  }
  return std::move(*device);
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_TEST_DEVICE_H_
