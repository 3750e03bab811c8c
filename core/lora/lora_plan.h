// LoraPlan: a LoRA adapter file read for one architecture from its header
// alone — its layout, every module it updates in the project's names, which
// tensors hold each module's A, B and alpha, and where its scale comes
// from — so a bad file is refused, and a good one sized, before any tensor
// data is read. Conversion follows upstream diffusers' converters
// (loaders/lora_conversion_utils.py) where they are right, and refuses
// where they silently drop or misapply: nothing of a file is ignored.
//
// Not here: reading the tensors (lora_adapter.h) or checking them against a
// model's weights (adapter_set.h).
#ifndef DIFFUSIOND_CORE_LORA_LORA_PLAN_H_
#define DIFFUSIOND_CORE_LORA_LORA_PLAN_H_

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/safetensors.h"
#include "core/lora/lora_file.h"
#include "core/lora/lora_key.h"
#include "core/lora/lora_rules.h"

namespace diffusiond {

// One module of the file: W' = W + scale · B·A on its weights.
struct PlannedLoraModule {
  // The file's name of the module, prefix included ("lora_unet_double_
  // blocks_0_img_attn_qkv"), for messages.
  std::string source;
  // Denoiser modules: the project's module names (weights "<m>.weight").
  // Text-encoder modules: the module as the file names it (kohya's still
  // flattened), since no encoder here reads adapters yet.
  LoraModuleTarget target;
  // Empty for the denoiser; else the text encoder as the file names it
  // ("text_encoder", "lora_te1", "clip_l", "t5xxl", ...).
  std::string text_encoder;
  const TensorRecord* down = nullptr;   // A [rank, in]
  const TensorRecord* up = nullptr;     // B [out, rank]
  const TensorRecord* alpha = nullptr;  // one value, or null
  int64_t rank = 0;
  // lora_alpha from the file's adapter metadata, when it has one for the
  // module's section. Without an alpha tensor or this, alpha = rank
  // (scale 1), as kohya, ComfyUI and PEFT all default.
  std::optional<double> metadata_alpha;
  bool rslora = false;  // scale = alpha / √rank
};

// Immutable; refers to the LoraFile's records, so the file must outlive it.
struct LoraPlan {
  std::string path;
  std::string architecture;
  LoraFormat format = LoraFormat::kDiffusers;
  std::vector<PlannedLoraModule> modules;               // the denoiser's
  std::vector<PlannedLoraModule> text_encoder_modules;  // kept, never applied here

  // What the loaded adapter holds at `dtype`: every A and B.
  int64_t bytes(torch::ScalarType dtype) const;
};

// Plans `file` as an adapter for `architecture` (a ModelFamily name).
// INVALID_ARGUMENT naming the file and (a bounded list of) the keys when:
// the architecture has no LoRA rules; the file holds no tensors, mixes
// layouts, or has keys of no layout; it has DoRA keys or metadata (DoRA is
// not supported; upstream loads it as plain LoRA); a module lacks its A or
// B, has more than one, or shapes that disagree (A [r, in], B [out, r],
// alpha one value, the metadata's rank); or modules map to no linear of
// the architecture (saying which architecture they all map to when one
// does: an adapter for another model).
absl::StatusOr<LoraPlan> plan_lora(const LoraFile& file, absl::string_view architecture);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LORA_LORA_PLAN_H_
