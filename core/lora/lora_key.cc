#include "core/lora/lora_key.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace diffusiond {
namespace {

// Tensor suffixes, longest first where one ends another. PEFT's adapter
// name may sit before ".weight" ("lora_A.default.weight", as upstream's
// converters strip "default.").
constexpr std::pair<absl::string_view, LoraTensor> kSuffixes[] = {
    {".lora_A.weight", LoraTensor::kDown},
    {".lora_B.weight", LoraTensor::kUp},
    {".lora_A.default.weight", LoraTensor::kDown},
    {".lora_B.default.weight", LoraTensor::kUp},
    {".lora_down.weight", LoraTensor::kDown},
    {".lora_up.weight", LoraTensor::kUp},
    {".alpha", LoraTensor::kAlpha},
    {".dora_scale", LoraTensor::kDoraScale},
    {".lora_magnitude_vector", LoraTensor::kDoraScale},
    {".lora_magnitude_vector.weight", LoraTensor::kDoraScale},
    {".lora_magnitude_vector.default.weight", LoraTensor::kDoraScale},
};

// The tensor a whole suffix (".lora_down.weight") names; kOther if none.
LoraTensor tensor_of_suffix(absl::string_view suffix) {
  for (const auto& [known, tensor] : kSuffixes) {
    if (suffix == known) return tensor;
  }
  return LoraTensor::kOther;
}

// Splits `rest` into module and tensor by a known suffix.
void split_suffix(absl::string_view rest, LoraKey* key) {
  for (const auto& [suffix, tensor] : kSuffixes) {
    if (absl::EndsWith(rest, suffix) && rest.size() > suffix.size()) {
      key->module = std::string(rest.substr(0, rest.size() - suffix.size()));
      key->tensor = tensor;
      return;
    }
  }
  key->module = std::string(rest);
  key->tensor = LoraTensor::kOther;
}

// kohya: "<section>_<flattened module>.<suffix>"; the module ends at the
// first '.'.
std::optional<LoraKey> parse_kohya(absl::string_view key) {
  static constexpr std::pair<absl::string_view, bool> kSections[] = {
      {"lora_unet_", false}, {"lora_transformer_", false}, {"lora_te1_", true},
      {"lora_te2_", true},   {"lora_te3_", true},          {"lora_te_", true},
  };
  for (const auto& [prefix, text_encoder] : kSections) {
    absl::string_view rest = key;
    if (!absl::ConsumePrefix(&rest, prefix)) continue;
    LoraKey out;
    out.format = LoraFormat::kKohya;
    out.section = std::string(prefix.substr(0, prefix.size() - 1));
    out.text_encoder = text_encoder;
    out.flattened = true;
    const size_t dot = rest.find('.');
    if (dot == absl::string_view::npos) {
      out.module = std::string(rest);
      out.tensor = LoraTensor::kOther;
      out.stem = std::string(key);
      return out;
    }
    out.module = std::string(rest.substr(0, dot));
    out.tensor = tensor_of_suffix(rest.substr(dot));
    out.stem = std::string(key.substr(0, key.size() - rest.size() + dot));
    if (out.tensor == LoraTensor::kOther) out.stem = std::string(key);
    return out;
  }
  return std::nullopt;
}

}  // namespace

absl::string_view lora_format_name(LoraFormat format) {
  static constexpr absl::string_view kNames[] = {"diffusers", "kohya", "ComfyUI"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == kNumLoraFormats);
  return kNames[static_cast<int>(format)];
}

std::optional<LoraKey> parse_lora_key(absl::string_view key) {
  if (std::optional<LoraKey> kohya = parse_kohya(key)) return kohya;
  LoraKey out;
  absl::string_view rest = key;
  if (absl::ConsumePrefix(&rest, "transformer.")) {
    out.format = LoraFormat::kDiffusers;
    out.section = "transformer";
  } else if (absl::ConsumePrefix(&rest, "text_encoder.") || absl::ConsumePrefix(&rest, "text_encoder_2.")) {
    out.format = LoraFormat::kDiffusers;
    out.section = std::string(key.substr(0, key.size() - rest.size() - 1));
    out.text_encoder = true;
  } else if (absl::ConsumePrefix(&rest, "diffusion_model.")) {
    out.format = LoraFormat::kComfyUi;
    out.section = "diffusion_model";
  } else if (absl::ConsumePrefix(&rest, "text_encoders.")) {
    // "text_encoders.<encoder>.transformer.<module>": the encoder's name,
    // then (for transformers models) the wrapper ComfyUI adds.
    const size_t dot = rest.find('.');
    if (dot == absl::string_view::npos || dot == 0) return std::nullopt;
    out.format = LoraFormat::kComfyUi;
    out.section = std::string(rest.substr(0, dot));
    out.text_encoder = true;
    rest.remove_prefix(dot + 1);
    absl::ConsumePrefix(&rest, "transformer.");
  } else {
    return std::nullopt;
  }
  split_suffix(rest, &out);
  out.stem = std::string(key.substr(0, key.size() - rest.size() + out.module.size()));
  return out;
}

}  // namespace diffusiond
