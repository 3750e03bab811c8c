#include "clients/diffusionctl/internal/command_table.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/precision/compute_dtype.h"
#include "core/util/bytes.h"
#include "kernels/fp8_format.h"

namespace diffusiond::ctl::internal {

absl::Status bad_value(absl::string_view flag, absl::string_view value,
                       absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": '", value, "' is not ", expected));
}

absl::StatusOr<double> finite_number(absl::string_view flag, const std::string& text) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !std::isfinite(v)) return bad_value(flag, text, "a number");
  return v;
}

absl::StatusOr<std::vector<LoraOption>> lora_flags(const ParsedArgs& p) {
  constexpr size_t kMaxLoras = 16;
  std::vector<LoraOption> out;
  const auto given = p.repeats.find("lora");
  if (given == p.repeats.end()) return out;
  for (const std::string& text : given->second) {
    LoraOption lora{text, 1.0};
    const size_t colon = text.rfind(':');
    double weight = 0;
    if (colon != std::string::npos && absl::SimpleAtod(text.substr(colon + 1), &weight) && std::isfinite(weight)) {
      lora = {text.substr(0, colon), weight};
    }
    if (lora.path.empty()) return bad_value("--lora", text, "PATH[:WEIGHT], such as loras/style.safetensors:0.8");
    out.push_back(std::move(lora));
  }
  if (out.size() > kMaxLoras) {
    return absl::InvalidArgumentError(absl::StrCat("--lora is given ", out.size(), " times; at most ", kMaxLoras));
  }
  return out;
}

FlagSpec lora_flag() {
  return {"lora", "PATH[:WEIGHT]",
          "a LoRA adapter file in the models directory, applied for this request only at WEIGHT (default 1); "
          "repeatable, the adapters' terms add",
          /*repeatable=*/true};
}

namespace {

absl::StatusOr<std::string> one_of(absl::string_view flag, const std::string& text,
                                   const std::vector<std::string>& allowed) {
  for (const std::string& a : allowed) {
    if (text == a) return text;
  }
  return bad_value(flag, text, absl::StrCat("one of ", absl::StrJoin(allowed, ", ")));
}

}  // namespace

absl::StatusOr<v1::Fp8Mode> fp8_mode(absl::string_view flag, const std::string& text) {
  std::vector<std::string> modes = {"default", "off"};
  for (std::string& name : fp8_format_names()) modes.push_back(std::move(name));
  absl::StatusOr<std::string> mode = one_of(flag, text, modes);
  if (!mode.ok()) return mode.status();
  Fp8Format format;
  return *mode == "off"                               ? v1::FP8_MODE_OFF
         : !parse_fp8_format(mode->c_str(), &format) ? v1::FP8_MODE_DEFAULT
         : format == Fp8Format::kE4M3Fn              ? v1::FP8_MODE_E4M3FN
                                                     : v1::FP8_MODE_E5M2;
}

absl::StatusOr<std::string> compute_dtype(absl::string_view flag, const std::string& text) {
  return one_of(flag, text, compute_dtype_names());
}

namespace {

absl::StatusOr<CommandOptions> build_load(const ParsedArgs& p) {
  LoadOptions o;
  o.path = p.args[0];
  if (const std::string* id = p.flag("id")) o.model_id = *id;
  if (const std::string* fp8 = p.flag("fp8")) {
    absl::StatusOr<v1::Fp8Mode> mode = fp8_mode("--fp8", *fp8);
    if (!mode.ok()) return mode.status();
    o.fp8 = *mode;
  }
  if (const std::string* dtype = p.flag("compute_dtype")) {
    absl::StatusOr<std::string> d = compute_dtype("--compute_dtype", *dtype);
    if (!d.ok()) return d.status();
    o.compute_dtype = *d;
  }
  if (const std::string* config = p.flag("config")) o.config_path = *config;
  return o;
}

absl::StatusOr<CommandOptions> build_unload(const ParsedArgs& p) {
  return UnloadOptions{p.args[0], p.has("wait")};
}

absl::StatusOr<CommandOptions> build_make_room(const ParsedArgs& p) {
  MakeRoomOptions o;
  absl::StatusOr<int64_t> bytes = parse_bytes(p.args[0]);
  if (!bytes.ok()) return bad_value("BYTES", p.args[0], "a size such as 4GiB or 800MB");
  o.bytes = *bytes;
  if (const std::string* device = p.flag("device")) {
    absl::StatusOr<std::string> d = one_of("--device", *device, {"cpu", "cuda"});
    if (!d.ok()) return d.status();
    o.device = *d;
  }
  return o;
}

absl::StatusOr<CommandOptions> build_lease(const ParsedArgs& p) {
  LeaseOptions o;
  o.model_id = p.args[0];
  if (const std::string* ttl = p.flag("ttl")) {
    absl::StatusOr<absl::Duration> d = positive_duration("--ttl", *ttl);
    if (!d.ok()) return d.status();
    o.ttl = *d;
  }
  return o;
}

absl::StatusOr<CommandOptions> build_renew(const ParsedArgs& p) {
  RenewOptions o;
  if (!absl::SimpleAtoi(p.args[0], &o.lease_id)) {
    return bad_value("LEASE_ID", p.args[0], "a lease id (a number that `lease` printed)");
  }
  if (const std::string* ttl = p.flag("ttl")) {
    absl::StatusOr<absl::Duration> d = positive_duration("--ttl", *ttl);
    if (!d.ok()) return d.status();
    o.ttl = *d;
  }
  if (const std::string* model = p.flag("model")) o.model = *model;
  return o;
}

absl::StatusOr<CommandOptions> build_release(const ParsedArgs& p) {
  ReleaseOptions o;
  if (!absl::SimpleAtoi(p.args[0], &o.lease_id)) {
    return bad_value("LEASE_ID", p.args[0], "a lease id (a number that `lease` printed)");
  }
  if (const std::string* model = p.flag("model")) o.model = *model;
  return o;
}

absl::StatusOr<CommandOptions> build_step(const ParsedArgs& p) {
  absl::StatusOr<std::vector<LoraOption>> loras = lora_flags(p);
  if (!loras.ok()) return loras.status();
  StepOptions o;
  o.model_id = p.args[0];
  const std::string* in = p.flag("in");
  const std::string* out = p.flag("out");
  if (in == nullptr || out == nullptr) {
    return absl::InvalidArgumentError("step needs --in FILE and --out FILE");
  }
  o.inputs_path = *in;
  o.outputs_path = *out;
  o.loras = *std::move(loras);
  return o;
}

// --expert_2, --boundary_ratio and --guidance_scale_2 into `o`, refused
// here as the daemon would refuse them (request_checks.cc), so a usage
// error never starts a call.
absl::Status read_second_expert(const ParsedArgs& p, DenoiseOptions& o) {
  const std::string* expert = p.flag("expert_2");
  if (expert == nullptr) {
    if (p.has("boundary_ratio") || p.has("guidance_scale_2")) {
      return absl::InvalidArgumentError("--boundary_ratio and --guidance_scale_2 need a second expert (--expert_2 ID)");
    }
    return absl::OkStatus();
  }
  if (expert->empty()) return bad_value("--expert_2", *expert, "a model id or a path in the models directory");
  o.expert_2 = *expert;
  const std::string* ratio = p.flag("boundary_ratio");
  if (ratio == nullptr) {
    return absl::InvalidArgumentError(
        "--expert_2 needs --boundary_ratio R: the steps whose timestep is below R x 1000 run the second expert");
  }
  absl::StatusOr<double> r = finite_number("--boundary_ratio", *ratio);
  if (!r.ok()) return r.status();
  if (!(*r > 0 && *r <= 1)) return bad_value("--boundary_ratio", *ratio, "in (0, 1] (Wan 2.2 T2V-A14B: 0.875)");
  o.boundary_ratio = *r;
  if (const std::string* g = p.flag("guidance_scale_2")) {
    absl::StatusOr<double> x = finite_number("--guidance_scale_2", *g);
    if (!x.ok()) return x.status();
    if (*x < 0) return bad_value("--guidance_scale_2", *g, "a guidance scale >= 0 (0: --guidance's)");
    o.guidance_scale_2 = *x;
  }
  return absl::OkStatus();
}

absl::StatusOr<CommandOptions> build_denoise(const ParsedArgs& p) {
  DenoiseOptions o;
  o.model_id = p.args[0];
  absl::StatusOr<std::vector<LoraOption>> loras = lora_flags(p);
  if (!loras.ok()) return loras.status();
  o.loras = *std::move(loras);
  const std::string* out = p.flag("out");
  if (out == nullptr) return absl::InvalidArgumentError("denoise needs --out FILE");
  o.out_path = *out;
  if (const std::string* c = p.flag("conditioning")) o.conditioning_path = *c;
  if (const std::string* negative = p.flag("negative")) o.negative_path = *negative;
  if (const std::string* scalars = p.flag("scalars")) {
    for (absl::string_view part : absl::StrSplit(*scalars, ',')) {
      const std::pair<std::string, std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
      double v = 0;
      if (kv.first.empty() || !absl::SimpleAtod(kv.second, &v) || !std::isfinite(v)) {
        return bad_value("--scalars", *scalars, "NAME=NUMBER pairs separated by commas, such as guidance=3.5");
      }
      o.scalars[kv.first] = v;
    }
  }
  if (p.has("latents") == p.has("shape")) {
    return absl::InvalidArgumentError("denoise needs either --latents FILE or --shape C,H,W");
  }
  if (const std::string* latents = p.flag("latents")) {
    if (p.has("seed"))
      return absl::InvalidArgumentError("--seed draws noise for --shape; --latents needs none");
    o.latents_path = *latents;
  }
  if (const std::string* shape = p.flag("shape")) {
    for (absl::string_view part : absl::StrSplit(*shape, ',')) {
      int64_t d = 0;
      if (!absl::SimpleAtoi(part, &d) || d <= 0) {
        return bad_value("--shape", *shape,
                         "positive integers separated by commas, such as 16,128,128");
      }
      o.latent_shape.push_back(d);
    }
  }
  if (const std::string* seed = p.flag("seed");
      seed != nullptr && !absl::SimpleAtoi(*seed, &o.seed)) {
    return bad_value("--seed", *seed, "an integer from 0 to 2^64-1");
  }
  if (const std::string* sigmas = p.flag("sigmas")) {
    for (absl::string_view part : absl::StrSplit(*sigmas, ',')) {
      float s = 0;
      if (!absl::SimpleAtof(part, &s) || !std::isfinite(s)) {
        return bad_value("--sigmas", *sigmas,
                         "numbers separated by commas, such as 1,0.75,0.5,0.25");
      }
      o.sigmas.push_back(s);
    }
    o.steps = static_cast<int>(o.sigmas.size());
  }
  if (const std::string* steps = p.flag("steps")) {
    int n = 0;
    if (!absl::SimpleAtoi(*steps, &n) || n < 1 || n > 10000) {
      return bad_value("--steps", *steps, "an integer from 1 to 10000");
    }
    if (!o.sigmas.empty() && n != o.steps) {
      return absl::InvalidArgumentError(
          absl::StrCat("--steps ", n, " disagrees with the ", o.steps, " values of --sigmas"));
    }
    o.steps = n;
  }
  if (const std::string* v = p.flag("guidance")) {
    absl::StatusOr<double> x = finite_number("--guidance", *v);
    if (!x.ok()) return x.status();
    o.guidance_scale = *x;
  }
  if (const std::string* v = p.flag("shift")) {
    absl::StatusOr<double> x = finite_number("--shift", *v);
    if (!x.ok()) return x.status();
    o.shift = *x;
  }
  if (absl::Status s = read_second_expert(p, o); !s.ok()) return s;
  return o;
}

absl::StatusOr<CommandOptions> build_events(const ParsedArgs& p) {
  EventsOptions o;
  if (const std::string* v = p.flag("count")) {
    if (!absl::SimpleAtoi(*v, &o.count) || o.count < 1) return bad_value("--count", *v, "a positive integer");
  }
  o.progress = !p.has("no_progress");
  return o;
}
}  // namespace

absl::StatusOr<absl::Duration> positive_duration(absl::string_view flag, const std::string& text) {
  absl::Duration d;
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds) && std::isfinite(seconds)) {
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return bad_value(flag, text, "a duration such as 30s, 5m or 1h30m");
  }
  if (d <= absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return bad_value(flag, text, "a positive, finite duration");
  }
  return d;
}

namespace {

// The table, in three groups (models; cache and leases; health and
// compute), in the order `diffusionctl --help` lists them.
std::vector<CommandSpec> model_commands() {
  return {
      {"load",
       "PATH",
       1,
       1,
       "Load a model (a .safetensors file or diffusers folder, relative to the daemon's models "
       "directory) with a progress bar, then print what it holds.",
       {{"id", "ID", "key to cache it under (default: PATH)"},
        {"fp8", "MODE", "layer weight storage: default (the daemon's), off, e4m3fn or e5m2"},
        {"compute_dtype", "DTYPE", "float32, bfloat16 or float16 (default: the daemon's)"},
        {"config", "FILE", "the model's config.json, in the models directory (a single file carries none)"}},
       build_load},
      {"unload",
       "ID",
       1,
       1,
       "Unload a model and print the bytes freed.",
       {{"wait", nullptr, "wait for work and leases on it to finish (default: fail if in use)"}},
       build_unload},
  };
}

std::vector<CommandSpec> cache_commands() {
  return {
      {"ls",
       "",
       0,
       0,
       "List the loaded models: id, architecture, compute dtype, fp8 tensors/tensors, RAM, pins, "
       "idle time.",
       {},
       [](const ParsedArgs&) -> absl::StatusOr<CommandOptions> { return ListOptions{}; }},
      {"available",
       "",
       0,
       0,
       "List what the daemon's models directory holds that could be loaded: path, format, architecture, "
       "role, and the RAM a load reserves with FP8 off and e4m3fn (at the daemon's compute dtype), "
       "read from headers only. A truncated walk is said on stderr.",
       {{"all", nullptr, "also list the candidates that cannot be loaded, with why"}},
       [](const ParsedArgs& p) -> absl::StatusOr<CommandOptions> { return AvailableOptions{p.has("all")}; }},
      {"events",
       "",
       0,
       0,
       "Watch the cache: the resident models first, then one line per event (loaded, load-failed, "
       "evicted and why, unloaded, rejected, waited-for-room, load progress) until Ctrl-C, --count "
       "events, or --timeout (which then exits 0).",
       {{"count", "N", "stop after N events, the first snapshot included"},
        {"no_progress", nullptr, "leave out load progress"}},
       build_events},
      {"stats",
       "",
       0,
       0,
       "Show the memory budgets (capacity, reserved, committed, high water), the cached models, "
       "hits, misses, evictions, rejections and the daemon's RSS.",
       {},
       [](const ParsedArgs&) -> absl::StatusOr<CommandOptions> { return StatsOptions{}; }},
      {"make-room",
       "BYTES",
       1,
       1,
       "Evict least-recently-used unpinned models until BYTES (e.g. 4GiB, 800MB) fit.",
       {{"device", "DEVICE", "cpu or cuda (default: cpu)"}},
       build_make_room},
      {"lease",
       "ID",
       1,
       1,
       "Pin a model so it is not evicted, and print the lease id.",
       {{"ttl", "DURATION", "how long the lease lasts, e.g. 60s or 10m (default: 60s)"}},
       build_lease},
      {"renew",
       "LEASE_ID",
       1,
       1,
       "Extend a lease to end --ttl from now.",
       {{"ttl", "DURATION", "how long from now the lease lasts (default: 60s)"},
        {"model", "ID", "the leased model, to route the call behind a proxy (docs/scaling.md)"}},
       build_renew},
      {"release",
       "LEASE_ID",
       1,
       1,
       "Release a lease.",
       {{"model", "ID", "the leased model, to route the call behind a proxy (docs/scaling.md)"}},
       build_release},
  };
}

std::vector<CommandSpec> compute_commands() {
  return {
      {"health",
       "[SERVICE]",
       0,
       1,
       "Ask the gRPC health service about SERVICE, e.g. liveness or readiness (default: the "
       "whole daemon); print its status and exit 0 only when it is SERVING.",
       {},
       [](const ParsedArgs& p) -> absl::StatusOr<CommandOptions> {
         return HealthOptions{p.args.empty() ? "" : p.args[0]};
       }},
      {"step",
       "MODEL_ID",
       1,
       1,
       "Run one model forward: every tensor of the input file is an input of that name; the "
       "outputs are written to the output file.",
       {{"in", "FILE", "inputs, a .safetensors file (required)"},
        lora_flag(),
        {"out", "FILE", "where to write the outputs as .safetensors (required)"}},
       build_step},
      {"denoise",
       "MODEL_ID",
       1,
       1,
       "Run the denoise loop, showing each step; Ctrl-C cancels it. Writes the final latents as "
       "tensor \"latents\".",
       {{"conditioning", "FILE",
         "the conditioning's tensors, named as the model's `ls` shows (e.g. cap_feats for Z-Image)"},
        {"negative", "FILE", "negative conditioning tensors, for classifier-free guidance"},
        {"scalars", "K=V,...", "conditioning scalars (e.g. guidance=3.5 for FLUX.1-dev), also given to the negative"},
        {"latents", "FILE", "initial latents [C,H,W]: one tensor, or \"latents\""},
        {"shape", "C,H,W", "start from noise of this shape instead of --latents (C,F,H,W for a video model)"},
        {"seed", "N", "seed of that noise, as torch.manual_seed (default: 0)"},
        {"steps", "N", "number of steps (default: 8, or the number of --sigmas)"},
        {"guidance", "S", "classifier-free guidance scale, neg + S*(pos - neg); <= 1 is off (default: 1)"},
        {"shift", "X", "flow-match shift (default: the model's)"},
        {"sigmas", "A,B,...", "explicit sigmas, strictly decreasing in (0, 1]"},
        {"expert_2", "ID",
         "a second expert (Wan 2.2's low-noise transformer, a loaded model's id or a path) for the steps below "
         "--boundary_ratio; each step line names the model that ran it"},
        {"boundary_ratio", "R",
         "with --expert_2 (required there): the steps whose timestep is below R x 1000 run it; in (0, 1], "
         "e.g. 0.875"},
        {"guidance_scale_2", "G", "with --expert_2: its guidance scale (default: --guidance's)"},
        lora_flag(),
        {"out", "FILE", "where to write the latents as .safetensors (required)"}},
       build_denoise},
  };
}

}  // namespace

const std::vector<CommandSpec>& commands() {
  static const auto* const table = [] {
    auto* all = new std::vector<CommandSpec>(model_commands());
    for (auto group : {cache_commands(), compute_commands(), pipeline_commands()}) {
      all->insert(all->end(), group.begin(), group.end());
    }
    return all;
  }();
  return *table;
}

const std::vector<FlagSpec>& global_flags() {
  static const auto* const table = new std::vector<FlagSpec>{
      {"address", "HOST:PORT", "the daemon (default: $DIFFUSIOND_ADDRESS, else localhost:50051)"},
      {"timeout", "DURATION", "deadline of each call, e.g. 30s or 5m (default: none)"},
      {"json", nullptr, "print results as JSON (proto3 JSON names) on stdout"},
      {"tls_ca", "FILE", "PEM root certificates: connect with TLS (default: plaintext)"},
      {"tls_cert", "FILE", "PEM client certificate for mutual TLS, with --tls_key and --tls_ca"},
      {"tls_key", "FILE", "PEM private key of --tls_cert"},
      {"token", "TOKEN",
       "bearer token sent with each call (default: $DIFFUSIOND_TOKEN, else the file $DIFFUSIOND_TOKEN_FILE "
       "names); --token_file keeps it out of the process list"},
      {"token_file", "FILE", "file holding the bearer token (a Kubernetes Secret mount, say)"},
      {"help", nullptr, "print this help, or a command's with COMMAND --help"},
  };
  return *table;
}

const CommandSpec* find_command(absl::string_view name) {
  for (const CommandSpec& c : commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

const FlagSpec* find_flag(const std::vector<FlagSpec>& flags, absl::string_view name) {
  for (const FlagSpec& f : flags) {
    if (name == f.name) return &f;
  }
  return nullptr;
}
}  // namespace diffusiond::ctl::internal
