// CallDevice: where one engine call ran, and what the VRAM tier did for it
// — the placement built, re-planned or found, the placements evicted to RAM
// to make room, the weights streamed — so that a pipeline's events can say
// it for every stage (encode, denoise, decode) alike.
#ifndef DIFFUSIOND_CORE_ENGINE_CALL_DEVICE_H_
#define DIFFUSIOND_CORE_ENGINE_CALL_DEVICE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace diffusiond {

struct CallDevice {
  std::string device = "cpu";        // "cpu", or the device's name ("sim", "cuda:0")
  bool placed = false;               // its placement was built (copied from RAM) for this call
  bool replanned = false;            // its placement was planned again for this call's activations
  std::string plan;                  // the placement's residency plan; empty on the CPU
  std::vector<std::string> evicted;  // placements evicted to RAM to make room for this call
  int64_t streamed_bytes = 0;        // weight bytes this call copied to the device by streaming

  // One line for an event: "on cpu", or e.g. "on sim: placed, all 4 blocks
  // resident; evicted the placement of \"a\" to RAM", "on cuda:0: 2 of 4
  // blocks resident, ... ; streamed 1.2 MiB".
  std::string summary() const;
  // Adds what a `later` call on the same model did, as one stage that
  // makes several calls (an encode of a prompt and of a negative one)
  // reports them: where the last ran, whether any placed or re-planned,
  // every eviction, and the bytes streamed in all.
  void add(CallDevice later);
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_CALL_DEVICE_H_
