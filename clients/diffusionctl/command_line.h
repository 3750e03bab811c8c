// diffusionctl's command line: global flags, the subcommands and their
// flags, parsed into typed options before any call is made (so a usage
// error never reaches the daemon), and the --help text generated from the
// same table.
//
// Not here: running the commands (commands.h).
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_COMMAND_LINE_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_COMMAND_LINE_H_

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "diffusiond/v1/model_service.pb.h"
#include "diffusiond/v1/pipeline_service.pb.h"

namespace diffusiond::ctl {

inline constexpr char kDefaultAddress[] = "localhost:50051";

struct GlobalOptions {
  // --address HOST:PORT. Default: $DIFFUSIOND_ADDRESS, else kDefaultAddress.
  std::string address = kDefaultAddress;
  // --timeout: deadline of each call. Default: none.
  std::optional<absl::Duration> timeout;
  // --json: results as JSON on stdout. Default: text for people.
  bool json = false;
  // --tls_ca FILE: PEM root certificates; TLS when set. Default: plaintext.
  std::string tls_ca;
  // --tls_cert FILE / --tls_key FILE: a client certificate and its key for
  // mutual TLS (with --tls_ca). Default: none.
  std::string tls_cert, tls_key;
  // --token TOKEN / --token_file FILE: the bearer token sent with each call
  // (token.h resolves them and their variables). Default: none.
  std::string token, token_file;
};

struct LoadOptions {
  std::string path;
  std::string model_id;  // empty: the daemon uses `path`
  v1::Fp8Mode fp8 = v1::FP8_MODE_DEFAULT;
  std::string compute_dtype;  // empty: the daemon's default
  std::string config_path;    // a config.json in the models dir; empty: none
};
struct UnloadOptions {
  std::string model_id;
  bool wait = false;
};
struct ListOptions {};
// ListAvailable: what the models directory holds that could be loaded.
struct AvailableOptions {
  bool all = false;  // also the candidates that cannot be loaded (with why)
};
// WatchEvents: prints events until Ctrl-C, `count` events, or the global
// --timeout (then it ends with status 0: the watch ran as long as asked).
struct EventsOptions {
  int64_t count = 0;     // 0: no limit
  bool progress = true;  // load progress events too
};
struct StatsOptions {};
struct MakeRoomOptions {
  int64_t bytes = 0;
  std::string device = "cpu";
};
struct LeaseOptions {
  std::string model_id;
  absl::Duration ttl = absl::Seconds(60);
};
// A lease id does not say its model: `model` (--model) routes the call to the
// replica that holds the lease behind a proxy (docs/scaling.md); empty: none.
struct RenewOptions {
  uint64_t lease_id = 0;
  absl::Duration ttl = absl::Seconds(60);
  std::string model;
};
struct ReleaseOptions {
  uint64_t lease_id = 0;
  std::string model;
};
struct HealthOptions {
  std::string service;  // empty: the whole server
};
// A LoRA adapter for one request (--lora PATH[:WEIGHT]): a file in the
// daemon's models directory and its weight (1 as trained, 0 left out).
struct LoraOption {
  std::string path;
  double weight = 1.0;
};
struct StepOptions {
  std::string model_id;
  std::string inputs_path;
  std::string outputs_path;
  std::vector<LoraOption> loras;
};
struct DenoiseOptions {
  std::string model_id;
  // .safetensors files whose tensors are the conditioning's named tensors
  // (the model's ModelInfo lists the names); empty: none.
  std::string conditioning_path;
  std::string negative_path;
  std::map<std::string, double> scalars;  // of the conditioning (and the negative)
  // Exactly one of: initial latents from a file, or noise of a shape.
  std::string latents_path;
  std::vector<int64_t> latent_shape;
  uint64_t seed = 0;
  int steps = 8;
  double guidance_scale = 1.0;  // <= 1 is off
  double shift = 0.0;           // 0: the model's default
  std::vector<float> sigmas;    // empty: the schedule's
  // Wan 2.2's low-noise expert (a loaded model's id or a path) for the
  // steps whose timestep is below boundary_ratio x 1000, guided by
  // guidance_scale_2 (0: guidance_scale). Empty: one model, and the other
  // two stay 0.
  std::string expert_2;
  double boundary_ratio = 0.0;    // in (0, 1] with expert_2
  double guidance_scale_2 = 0.0;  // >= 0
  std::vector<LoraOption> loras;
  std::string out_path;
};

// The PipelineService commands. Model fields hold a loaded model's id or a
// path in the daemon's models directory.
struct GenerateOptions {
  std::string pipeline;  // a pipeline folder; empty: every component given
  // Component name -> a loaded model's id or a path; each overrides the
  // pipeline's (--component NAME=ID, and the --text_encoder, --transformer
  // and --vae shorthands).
  std::map<std::string, std::string> components;
  std::string prompt;
  std::string negative_prompt;  // used when the pipeline applies classifier-free guidance
  int width = 0;                // pixels, a multiple of 16; 0: the pipeline's default
  int height = 0;
  int steps = 0;                // 0: the pipeline's default
  std::optional<double> guidance_scale;  // upstream's meaning; empty: the pipeline's default
  double true_cfg_scale = 0.0;  // FLUX's true CFG, with negative_prompt; 0: not asked
  std::string image_path;       // img2img: a PNG, sent as its bytes
  std::string mask_path;        // inpainting, with image_path
  // Upstream's padding_mask_crop, with mask_path: pixels around the mask's
  // box; empty: no crop.
  std::optional<int> padding_mask_crop;
  std::vector<LoraOption> loras;
  double strength = 0.0;        // with image_path; 0: the pipeline's default
  int num_images = 0;           // 0: 1; images go to out_path with "-<index>" before ".png"
  std::vector<uint64_t> seeds;  // one per image; replaces seed
  std::vector<float> sigmas;    // upstream's sigmas, before the schedule's shift
  int max_sequence_length = 0;  // 0: the pipeline's default
  int num_frames = 0;           // a video pipeline's frames; 0: the pipeline's default
  std::optional<double> guidance_scale_2;  // Wan 2.2's second expert's; empty: guidance_scale
  // A video pipeline's videos: an MP4 each (out_path with ".mp4"), or
  // their frames as PNGs (out_path's stem, then "-<frame>.png").
  v1::VideoFormat video_format = v1::VIDEO_FORMAT_MP4;
  // Component name -> how this Generate loads it (--component_fp8
  // NAME=MODE, --component_dtype NAME=DTYPE); unset: the daemon's defaults.
  struct ComponentLoad {
    v1::Fp8Mode fp8 = v1::FP8_MODE_DEFAULT;
    std::string compute_dtype;
  };
  std::map<std::string, ComponentLoad> component_options;
  std::optional<uint64_t> seed;  // empty: a random seed, printed with the result
  double shift = 0.0;           // 0: the transformer's schedule
  std::string out_path;         // the PNG (a video pipeline: the MP4, or the PNG frames' stem)
};
struct EncodeOptions {
  std::string text_encoder;
  std::string prompt;
  std::string out_path;  // the conditioning tensors, as .safetensors
  // Whose encoding: a pipeline family's name or a pipeline folder; empty:
  // the one family with a text encoder of this architecture.
  std::string pipeline;
};
struct DecodeOptions {
  std::string vae;
  std::string latents_path;  // one tensor, or one called "latents"
  std::string out_path;      // the PNG
};

using CommandOptions =
    std::variant<LoadOptions, UnloadOptions, ListOptions, AvailableOptions, EventsOptions, StatsOptions,
                 MakeRoomOptions, LeaseOptions, RenewOptions, ReleaseOptions, HealthOptions, StepOptions,
                 DenoiseOptions, GenerateOptions, EncodeOptions, DecodeOptions>;

struct Invocation {
  GlobalOptions global;
  // --help (or no command): print help_text(help_command) and exit 0.
  bool help = false;
  std::string help_command;  // the command --help was given with, or empty
  CommandOptions command;
};

// Parses `args` (argv without the program name). `env_address` is
// $DIFFUSIOND_ADDRESS, or null. Returns INVALID_ARGUMENT naming the unknown
// command or flag, or the flag and its bad value; the caller prints it with
// the usage and exits 2.
absl::StatusOr<Invocation> parse_command_line(const std::vector<std::string>& args,
                                              const char* env_address);

// Whether `name` is one of the commands.
bool is_command(absl::string_view name);

// The help text: every command and flag when `command` is empty, otherwise
// that command's usage and flags.
std::string help_text(absl::string_view command);

}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_COMMAND_LINE_H_
