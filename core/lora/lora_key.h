// The keys of a LoRA adapter file: which of the three layouts users
// download writes them (diffusers/PEFT, kohya, ComfyUI), whether a key
// belongs to the denoiser or to a text encoder, the module it updates (as
// the file names it) and which tensor of the module it is. Parsed once
// into a typed result; nothing downstream looks at prefixes or suffixes.
//
// Not here: what a module name means for an architecture (lora_rules.h).
#ifndef DIFFUSIOND_CORE_LORA_LORA_KEY_H_
#define DIFFUSIOND_CORE_LORA_LORA_KEY_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace diffusiond {

enum class LoraFormat {
  kDiffusers,  // "transformer.<module>.lora_A.weight" (PEFT), "text_encoder.<module>..."
  kKohya,      // "lora_unet_<flattened module>.lora_down.weight", "lora_te1_...", ".alpha"
  kComfyUi,    // "diffusion_model.<module>.lora_down.weight" / ".lora_A.weight",
               // "text_encoders.<encoder>.<module>..."
};
inline constexpr int kNumLoraFormats = 3;
absl::string_view lora_format_name(LoraFormat format);

// Which tensor of a module a key holds.
enum class LoraTensor {
  kDown,       // lora_A / lora_down: [rank, in]
  kUp,         // lora_B / lora_up: [out, rank]
  kAlpha,      // alpha, one value
  kDoraScale,  // DoRA's magnitude (dora_scale, lora_magnitude_vector)
  kOther,      // anything else: a bias or norm diff, a LoRA bias, an unknown suffix
};

struct LoraKey {
  LoraFormat format = LoraFormat::kDiffusers;
  // The denoiser ("transformer", "diffusion_model", "lora_unet", ...) or a
  // text encoder, as the file names it ("text_encoder", "text_encoder_2",
  // "lora_te1", "clip_l", "t5xxl", ...).
  std::string section;
  bool text_encoder = false;
  // The key without its tensor suffix: the keys of one module share it.
  std::string stem;
  // The module as the file names it, prefix and tensor suffix removed.
  // kohya writes it flattened: every '.' of the real name as '_'.
  std::string module;
  bool flattened = false;
  LoraTensor tensor = LoraTensor::kOther;
};

// Parses `key`; nothing when it starts with none of the three layouts'
// prefixes. A key whose suffix is not a known tensor's is kOther with the
// whole remainder as its module.
std::optional<LoraKey> parse_lora_key(absl::string_view key);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LORA_LORA_KEY_H_
