// The PipelineService commands' table entries and builders: generate,
// encode, decode.
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/diffusionctl/internal/command_table.h"

namespace diffusiond::ctl::internal {
namespace {

// The value of the flag `name`, which the command requires.
absl::StatusOr<std::string> required(const ParsedArgs& p, absl::string_view command,
                                     const std::string& name, absl::string_view value) {
  if (const std::string* v = p.flag(name)) return *v;
  return absl::InvalidArgumentError(absl::StrCat(command, " needs --", name, " ", value));
}

// Parses an integer in [min, max], bad_value naming `flag` otherwise.
absl::StatusOr<int> int_in(const std::string& flag, const std::string& text, int min, int max,
                           absl::string_view expected) {
  int v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < min || v > max) return bad_value(flag, text, expected);
  return v;
}

absl::StatusOr<int> image_side(const std::string& flag, const std::string& text) {
  constexpr int kMax = std::numeric_limits<int32_t>::max() / 16 * 16;
  absl::StatusOr<int> v = int_in(flag, text, 16, kMax, "a positive multiple of 16, such as 1024");
  if (v.ok() && *v % 16 != 0)
    return bad_value(flag, text, "a positive multiple of 16, such as 1024");
  return v;
}

absl::StatusOr<CommandOptions> build_generate(const ParsedArgs& p) {
  GenerateOptions o;
  o.pipeline = p.args[0] == "-" ? "" : p.args[0];
  for (const char* name : {"text_encoder", "transformer", "vae"}) {
    if (const std::string* v = p.flag(name)) o.components[name] = *v;
  }
  const auto given = p.repeats.find("component");
  for (const std::string& pair : given != p.repeats.end() ? given->second : std::vector<std::string>{}) {
    const size_t eq = pair.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == pair.size()) {
      return bad_value("--component", pair, "NAME=ID, such as text_encoder_2=flux/text_encoder_2");
    }
    if (!o.components.emplace(pair.substr(0, eq), pair.substr(eq + 1)).second) {
      return absl::InvalidArgumentError(absl::StrCat("component ", pair.substr(0, eq), " is given twice"));
    }
  }
  // Which components a pipeline needs is the daemon's to say; without a
  // folder it needs at least the transformer to choose the pipeline.
  if (o.pipeline.empty() && o.components.count("transformer") == 0) {
    return absl::InvalidArgumentError(
        "generate - (no pipeline) needs every component, at least --transformer (or --component transformer=ID)");
  }
  absl::StatusOr<std::string> prompt = required(p, "generate", "prompt", "TEXT");
  if (!prompt.ok()) return prompt.status();
  o.prompt = *prompt;
  absl::StatusOr<std::string> out = required(p, "generate", "out", "FILE.png");
  if (!out.ok()) return out.status();
  o.out_path = *out;
  if (const std::string* v = p.flag("negative")) o.negative_prompt = *v;
  for (const auto& [flag, field] :
       {std::pair<const char*, int*>{"width", &o.width}, {"height", &o.height}}) {
    if (const std::string* v = p.flag(flag)) {
      absl::StatusOr<int> side = image_side(absl::StrCat("--", flag), *v);
      if (!side.ok()) return side.status();
      *field = *side;
    }
  }
  if (const std::string* v = p.flag("steps")) {
    absl::StatusOr<int> steps = int_in("--steps", *v, 1, 10000, "an integer from 1 to 10000");
    if (!steps.ok()) return steps.status();
    o.steps = *steps;
  }
  if (const std::string* v = p.flag("guidance")) {
    absl::StatusOr<double> x = finite_number("--guidance", *v);
    if (!x.ok()) return x.status();
    o.guidance_scale = *x;
  }
  if (const std::string* v = p.flag("image")) o.image_path = *v;
  if (const std::string* v = p.flag("mask")) {
    if (o.image_path.empty()) return absl::InvalidArgumentError("--mask needs the --image it masks");
    o.mask_path = *v;
  }
  if (const std::string* v = p.flag("padding_mask_crop")) {
    absl::StatusOr<int> n = int_in("--padding_mask_crop", *v, 0, 4096, "an integer from 0 to 4096");
    if (!n.ok()) return n.status();
    if (o.mask_path.empty()) return absl::InvalidArgumentError("--padding_mask_crop needs the --mask it crops around");
    o.padding_mask_crop = *n;
  }
  absl::StatusOr<std::vector<LoraOption>> loras = lora_flags(p);
  if (!loras.ok()) return loras.status();
  o.loras = *std::move(loras);
  if (const std::string* v = p.flag("strength")) {
    absl::StatusOr<double> x = finite_number("--strength", *v);
    if (!x.ok()) return x.status();
    if (!(*x > 0 && *x <= 1)) return bad_value("--strength", *v, "a number in (0, 1]");
    if (o.image_path.empty()) return absl::InvalidArgumentError("--strength needs an --image");
    o.strength = *x;
  }
  if (const std::string* v = p.flag("num_images")) {
    absl::StatusOr<int> n = int_in("--num_images", *v, 1, 64, "an integer from 1 to 64");
    if (!n.ok()) return n.status();
    o.num_images = *n;
  }
  if (const std::string* v = p.flag("sigmas")) {
    for (absl::string_view part : absl::StrSplit(*v, ',')) {
      float sigma = 0;
      if (!absl::SimpleAtof(part, &sigma) || !(sigma > 0 && sigma <= 1)) {
        return bad_value("--sigmas", *v, "numbers in (0, 1] separated by commas, decreasing, such as 1,0.75,0.5,0.25");
      }
      o.sigmas.push_back(sigma);
    }
  }
  if (const std::string* v = p.flag("max_sequence_length")) {
    absl::StatusOr<int> n = int_in("--max_sequence_length", *v, 1, 4096, "an integer from 1 to 4096");
    if (!n.ok()) return n.status();
    o.max_sequence_length = *n;
  }
  if (const std::string* v = p.flag("num_frames")) {
    absl::StatusOr<int> n = int_in("--num_frames", *v, 1, 1025, "an integer from 1 to 1025 (Wan: 1 + 4k)");
    if (!n.ok()) return n.status();
    o.num_frames = *n;
  }
  if (const std::string* v = p.flag("guidance_2")) {
    absl::StatusOr<double> x = finite_number("--guidance_2", *v);
    if (!x.ok()) return x.status();
    if (*x < 1) return bad_value("--guidance_2", *v, "a number >= 1 (Wan 2.2's second expert's guidance)");
    o.guidance_scale_2 = *x;
  }
  if (const std::string* v = p.flag("video_format")) {
    if (*v == "mp4") {
      o.video_format = v1::VIDEO_FORMAT_MP4;
    } else if (*v == "png_frames") {
      o.video_format = v1::VIDEO_FORMAT_PNG_FRAMES;
    } else {
      return bad_value("--video_format", *v, "mp4 or png_frames");
    }
  }
  if (const std::string* v = p.flag("seeds")) {
    for (absl::string_view part : absl::StrSplit(*v, ',')) {
      uint64_t seed = 0;
      if (!absl::SimpleAtoi(part, &seed)) return bad_value("--seeds", *v, "integers separated by commas, such as 1,2");
      o.seeds.push_back(seed);
    }
    if (p.flag("seed") != nullptr) return absl::InvalidArgumentError("give --seed or --seeds, not both");
    if (o.num_images == 0) o.num_images = static_cast<int>(o.seeds.size());
    if (o.num_images != static_cast<int>(o.seeds.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("--seeds gives ", o.seeds.size(), " seeds for --num_images ", o.num_images));
    }
  }
  if (const std::string* v = p.flag("true_cfg")) {
    absl::StatusOr<double> x = finite_number("--true_cfg", *v);
    if (!x.ok()) return x.status();
    if (*x < 0) return bad_value("--true_cfg", *v, "a number >= 0 (FLUX's true CFG scale, with --negative)");
    o.true_cfg_scale = *x;
  }
  // --component_fp8 NAME=MODE and --component_dtype NAME=DTYPE, repeatable.
  for (const char* flag : {"component_fp8", "component_dtype"}) {
    const auto given = p.repeats.find(flag);
    for (const std::string& pair : given != p.repeats.end() ? given->second : std::vector<std::string>{}) {
      const size_t eq = pair.find('=');
      const std::string name = absl::StrCat("--", flag);
      if (eq == 0 || eq == std::string::npos) return bad_value(name, pair, "NAME=VALUE, such as text_encoder=off");
      GenerateOptions::ComponentLoad& load = o.component_options[pair.substr(0, eq)];
      if (flag == std::string("component_fp8")) {
        absl::StatusOr<v1::Fp8Mode> mode = fp8_mode(name, pair.substr(eq + 1));
        if (!mode.ok()) return mode.status();
        load.fp8 = *mode;
      } else {
        absl::StatusOr<std::string> dtype = compute_dtype(name, pair.substr(eq + 1));
        if (!dtype.ok()) return dtype.status();
        load.compute_dtype = *dtype;
      }
    }
  }
  if (const std::string* v = p.flag("shift")) {
    absl::StatusOr<double> x = finite_number("--shift", *v);
    if (!x.ok()) return x.status();
    if (*x < 0) return bad_value("--shift", *v, "a number >= 0 (0: the transformer's schedule)");
    o.shift = *x;
  }
  if (const std::string* v = p.flag("seed")) {
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(*v, &seed)) return bad_value("--seed", *v, "an integer from 0 to 2^64-1");
    o.seed = seed;
  }
  return o;
}

absl::StatusOr<CommandOptions> build_encode(const ParsedArgs& p) {
  EncodeOptions o;
  o.text_encoder = p.args[0];
  absl::StatusOr<std::string> prompt = required(p, "encode", "prompt", "TEXT");
  if (!prompt.ok()) return prompt.status();
  o.prompt = *prompt;
  absl::StatusOr<std::string> out = required(p, "encode", "out", "FILE.safetensors");
  if (!out.ok()) return out.status();
  o.out_path = *out;
  if (const std::string* v = p.flag("pipeline")) o.pipeline = *v;
  return o;
}

absl::StatusOr<CommandOptions> build_decode(const ParsedArgs& p) {
  DecodeOptions o;
  o.vae = p.args[0];
  absl::StatusOr<std::string> latents = required(p, "decode", "latents", "FILE.safetensors");
  if (!latents.ok()) return latents.status();
  o.latents_path = *latents;
  absl::StatusOr<std::string> out = required(p, "decode", "out", "FILE.png");
  if (!out.ok()) return out.status();
  o.out_path = *out;
  return o;
}

}  // namespace

std::vector<CommandSpec> pipeline_commands() {
  return {
      {"generate",
       "PIPELINE",
       1,
       1,
       "Make an image (a video pipeline: a video) from a prompt: encode it, denoise and decode, loading "
       "(and evicting) models as the budget needs, with a progress line per stage on stderr; Ctrl-C "
       "cancels. PIPELINE is a pipeline folder in the models directory, or \"-\" when every component "
       "is given (--component, or --text_encoder, --transformer and --vae). Writes the PNG (the MP4, or "
       "the PNG frames) and prints its path, size and seed.",
       {{"prompt", "TEXT", "what to draw (required)"},
        {"negative", "TEXT",
         "negative prompt, for classifier-free guidance (Z-Image: --guidance > 0; FLUX: --true_cfg > 1)"},
        {"width", "N", "pixels, a multiple of 16 (default: the pipeline's, 1024; with --image its size)"},
        {"height", "N", "pixels, a multiple of 16 (default: the pipeline's, 1024; with --image its size)"},
        {"steps", "N", "denoise steps (default: the pipeline's: Z-Image 50, FLUX.1-dev 28, schnell 4)"},
        {"guidance", "S",
         "upstream's guidance_scale (default: the pipeline's): Z-Image's classifier-free g, 0 off, 5.0; "
         "FLUX.1-dev's distilled guidance, 3.5 (img2img and inpainting 7.0)"},
        {"true_cfg", "S", "FLUX's true classifier-free guidance scale (> 1, with --negative)"},
        {"image", "FILE.png", "img2img: the init image, at the size to generate"},
        {"mask", "FILE.png", "inpainting, with --image: white is repainted, black kept; the image's size"},
        {"padding_mask_crop", "N",
         "with --mask (FLUX, Qwen-Image): inpaint the mask's box padded by N pixels, at the size to generate, "
         "and paste it back (the image may be of any size; the output has its size)"},
        {"strength", "S", "with --image: how much of the schedule runs, (0, 1] (default: the pipeline's)"},
        lora_flag(),
        {"num_images", "N", "images from the prompt, written as OUT-0.png, OUT-1.png, ... (default 1)"},
        {"seeds", "A,B,...", "one seed per image, in place of --seed (one generator for the batch)"},
        {"sigmas", "S1,S2,...", "upstream's sigmas, before the schedule's shift; their count is the steps"},
        {"max_sequence_length", "N", "the text encoder's tokens (Z-Image's Qwen3, FLUX's T5; default 512)"},
        {"num_frames", "N", "a video pipeline's frames (Wan: 1 + 4k, default 81)"},
        {"guidance_2", "S", "Wan 2.2's low-noise expert's guidance_scale_2 (default: --guidance's)"},
        {"video_format", "FORMAT",
         "a video pipeline's output: mp4 (OUT with .mp4, the default) or png_frames (OUT-0000.png, ...)"},
        {"component_fp8", "NAME=MODE",
         "how this generate loads component NAME: FP8 default, off, e4m3fn or e5m2; repeatable",
         /*repeatable=*/true},
        {"component_dtype", "NAME=DTYPE",
         "how this generate loads component NAME: compute dtype float32, bfloat16 or float16; repeatable",
         /*repeatable=*/true},
        {"seed", "N", "seed of the initial noise (default: a random one, printed)"},
        {"shift", "X", "flow-match shift (default: the transformer's schedule)"},
        {"text_encoder", "ID", "a loaded model's id or a path, instead of the pipeline's"},
        {"transformer", "ID", "a loaded model's id or a path, instead of the pipeline's"},
        {"vae", "ID", "a loaded model's id or a path, instead of the pipeline's"},
        {"component", "NAME=ID",
         "any component (text_encoder_2, ...) by a loaded model's id or a path; repeatable",
         /*repeatable=*/true},
        {"out", "FILE", "where to write the image (a video pipeline: OUT.mp4, or OUT-<frame>.png) (required)"}},
       build_generate},
      {"encode",
       "TEXT_ENCODER",
       1,
       1,
       "Encode a prompt with a text encoder (a loaded model's id or a path) and write the "
       "conditioning tensors by name, for denoise --conditioning; prints the token count.",
       {{"prompt", "TEXT", "the prompt (required)"},
        {"pipeline", "NAME",
         "whose encoding: a pipeline family (z-image, flux, qwen-image, wan, krea2) or a "
         "pipeline folder; needed when several families use the encoder's architecture"},
        {"out", "FILE", "where to write the tensors (required)"}},
       build_encode},
      {"decode",
       "VAE",
       1,
       1,
       "Decode latents with a VAE (a loaded model's id or a path) and write the image as a PNG.",
       {{"latents", "FILE",
         "latents [C,H,W] as denoise wrote them: one tensor, or \"latents\" (required)"},
        {"out", "FILE", "where to write the image (a video pipeline: OUT.mp4, or OUT-<frame>.png) (required)"}},
       build_decode},
  };
}

}  // namespace diffusiond::ctl::internal
