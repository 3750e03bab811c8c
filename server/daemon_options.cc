#include "server/daemon_options.h"

#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/precision/compute_dtype.h"
#include "core/util/bytes.h"
#include "core/util/status_macros.h"
#include "kernels/fp8_format.h"

namespace diffusiond {
namespace {

using Setter = std::function<absl::Status(DaemonOptions&, const std::string&)>;

struct Flag {
  const char* name;
  const char* default_text;
  const char* help;
  Setter set;
};

absl::Status bad(const std::string& value, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat("'", value, "' is not ", expected));
}

absl::StatusOr<bool> parse_bool(const std::string& v) {
  const std::string l = absl::AsciiStrToLower(v);
  if (l == "true" || l == "1" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return false;
  return bad(v, "a boolean (true/false)");
}

Setter one_of(std::string DaemonOptions::*field, std::vector<std::string> allowed) {
  return [field, allowed](DaemonOptions& o, const std::string& v) -> absl::Status {
    for (const std::string& a : allowed) {
      if (v == a) {
        o.*field = v;
        return absl::OkStatus();
      }
    }
    std::string list;
    for (const std::string& a : allowed) absl::StrAppend(&list, list.empty() ? "" : ", ", a.empty() ? "\"\"" : a);
    return bad(v, absl::StrCat("one of ", list));
  };
}

std::vector<std::string> with_names(std::vector<std::string> first, const std::vector<std::string>& then) {
  first.insert(first.end(), then.begin(), then.end());
  return first;
}

Setter text(std::string DaemonOptions::*field) {
  return [field](DaemonOptions& o, const std::string& v) {
    o.*field = v;
    return absl::OkStatus();
  };
}

Setter budget(std::optional<int64_t> DaemonOptions::*field) {
  return [field](DaemonOptions& o, const std::string& v) -> absl::Status {
    if (v == "auto") {
      (o.*field).reset();
      return absl::OkStatus();
    }
    absl::StatusOr<int64_t> bytes = parse_bytes(v);
    if (!bytes.ok()) return bad(v, "'auto' or a size such as 12GiB");
    o.*field = *bytes;
    return absl::OkStatus();
  };
}

Setter size(int64_t DaemonOptions::*field, int64_t min_bytes) {
  return [field, min_bytes](DaemonOptions& o, const std::string& v) -> absl::Status {
    absl::StatusOr<int64_t> bytes = parse_bytes(v);
    if (!bytes.ok() || *bytes < min_bytes) {
      return bad(v, min_bytes > 0 ? "a positive size such as 4GiB" : "a size such as 2GiB");
    }
    o.*field = *bytes;
    return absl::OkStatus();
  };
}

constexpr int kMaxCudaIndex = 1023;

// "cpu", "sim", "cuda" (kept as "cuda:0") or "cuda:N".
absl::Status set_device(DaemonOptions& o, const std::string& v) {
  if (v == "cpu" || v == "sim") {
    o.device = v;
    return absl::OkStatus();
  }
  if (v == "cuda") {
    o.device = "cuda:0";
    return absl::OkStatus();
  }
  absl::string_view index = v;
  int n = -1;
  if (absl::ConsumePrefix(&index, "cuda:") && !index.empty() && absl::ascii_isdigit(index.front()) &&
      absl::SimpleAtoi(index, &n) && n <= kMaxCudaIndex) {
    o.device = absl::StrCat("cuda:", n);
    return absl::OkStatus();
  }
  return bad(v, "cpu, cuda, cuda:N (N a GPU index) or sim");
}

// "id=path,id=path" (a bare "path" keys the model by its path); empty: none.
// Ids and paths are trimmed; a comma or '=' inside one cannot be written.
absl::Status set_preload(DaemonOptions& o, const std::string& v) {
  std::vector<PreloadModel> models;
  std::set<std::string> ids;
  for (absl::string_view entry : absl::StrSplit(v, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) {
      if (v.find_first_not_of(" \t") == std::string::npos) break;  // the whole value is empty
      return bad(v, "ID=PATH entries separated by commas (an entry is empty)");
    }
    PreloadModel m;
    if (const size_t eq = entry.find('='); eq != absl::string_view::npos) {
      m.model_id = std::string(absl::StripAsciiWhitespace(entry.substr(0, eq)));
      m.path = std::string(absl::StripAsciiWhitespace(entry.substr(eq + 1)));
      if (m.model_id.empty() || m.path.empty()) {
        return bad(v, absl::StrCat("ID=PATH entries separated by commas ('", entry, "' lacks the ",
                                   m.model_id.empty() ? "id" : "path", ")"));
      }
    } else {
      m.path = std::string(entry);
    }
    // A second load of one id with another path would be refused at start; say so now, naming it.
    const std::string& key = m.model_id.empty() ? m.path : m.model_id;
    if (!ids.insert(key).second) return bad(v, absl::StrCat("a list of distinct models ('", key, "' twice)"));
    models.push_back(std::move(m));
  }
  o.preload = std::move(models);
  return absl::OkStatus();
}

const std::vector<Flag>& flags() {
  static const auto* const table = new std::vector<Flag>{
      {"listen", "0.0.0.0:50051", "gRPC listen address (host:port)", text(&DaemonOptions::listen)},
      {"metrics_listen", "0.0.0.0:9464", "Prometheus metrics listen address (host:port)",
       text(&DaemonOptions::metrics_listen)},
      {"health_listen", "", "plaintext gRPC health-only listen address (host:port), for probes when TLS is on",
       text(&DaemonOptions::health_listen)},
      {"models_dir", "/models", "folder that every load path must lie inside", text(&DaemonOptions::models_dir)},
      {"ram_budget", "auto", "bytes of RAM for model weights; auto = 0.85 x min(cgroup, MemTotal) - 512MiB",
       budget(&DaemonOptions::ram_budget_bytes)},
      {"device", "cpu",
       "where denoisers run: cpu, cuda:N (cuda = cuda:0), or sim (a simulated GPU in host memory, for tests)",
       set_device},
      {"vram_budget", "auto",
       "bytes of device memory for placed models and their activations; auto = the device's free memory "
       "at start - --vram_headroom (not with --device cpu)",
       budget(&DaemonOptions::vram_budget_bytes)},
      {"vram_headroom", "2GiB",
       "device memory --vram_budget auto leaves out: CUDA context, cuBLAS workspaces, allocator "
       "fragmentation, anything not accounted (not with --device cpu)",
       size(&DaemonOptions::vram_headroom_bytes, 0)},
      {"sim_device_memory", "4GiB", "capacity of the simulated device, a testing device (only with --device sim)",
       size(&DaemonOptions::sim_device_memory_bytes, 1)},
      {"compute_dtype", "",
       "dtype of every forward: float32, bfloat16, float16, or auto (bfloat16 on cuda:N and on CPUs with native "
       "bf16 matmuls, AVX512-BF16 or AMX; float32 elsewhere); default: auto, except float32 on --device sim; the "
       "ready line says what was chosen and why",
       one_of(&DaemonOptions::compute_dtype, with_names({"", "auto"}, compute_dtype_names()))},
      {"fp8", "e4m3fn", "default FP8 storage of layer weights: e4m3fn, e5m2 or off",
       one_of(&DaemonOptions::fp8, with_names(fp8_format_names(), {"off"}))},
      {"narrow_weights", "true",
       "keep weights the checkpoint stores narrower than the compute dtype (bf16/fp16 under float32) as "
       "stored, upcasting each per use: the same results in less RAM; false widens them at load",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         absl::StatusOr<bool> b = parse_bool(v);
         if (!b.ok()) return b.status();
         o.narrow_weights = *b;
         return absl::OkStatus();
       }},
      {"max_message_bytes", "256MiB", "largest gRPC message accepted or sent",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         absl::StatusOr<int64_t> b = parse_bytes(v);
         if (!b.ok() || *b < 4096 || *b > (int64_t{2} << 30) - 1) return bad(v, "a size from 4KiB to 2GiB");
         o.max_message_bytes = *b;
         return absl::OkStatus();
       }},
      {"threads", "auto", "threads one forward may use; auto = the cgroup CPU quota, else the usable cores",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         int n = 0;
         if (v == "auto") {
           o.threads.reset();
         } else if (!absl::SimpleAtoi(v, &n) || n < 1 || n > 1024) {
           return bad(v, "'auto' or an integer from 1 to 1024");
         } else {
           o.threads = n;
         }
         return absl::OkStatus();
       }},
      {"max_concurrent_denoise", "1", "denoise jobs that run at once; more wait in a bounded queue",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 1 || n > 1024) return bad(v, "an integer from 1 to 1024");
         o.max_concurrent_denoise = n;
         return absl::OkStatus();
       }},
      {"max_queued_denoise", "8", "Step and Denoise calls that may wait for a free slot; beyond, RESOURCE_EXHAUSTED",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 0 || n > 65536) return bad(v, "an integer from 0 to 65536");
         o.max_queued_denoise = n;
         return absl::OkStatus();
       }},
      {"drain_grace", "30s", "on SIGTERM, how long in-flight work may finish before it is cancelled",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         absl::Duration d;
         if (!absl::ParseDuration(v, &d) || d < absl::ZeroDuration()) return bad(v, "a duration such as 30s");
         o.drain_grace = d;
         return absl::OkStatus();
       }},
      {"load_timeout", "10m",
       "a load still running this long after it started is cancelled (DEADLINE_EXCEEDED) and its memory "
       "freed; 0 = no limit",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         absl::Duration d;
         if (!absl::ParseDuration(v, &d) || d < absl::ZeroDuration()) {
           return bad(v, "a duration such as 10m (0: no limit)");
         }
         o.load_timeout = d == absl::ZeroDuration() ? absl::InfiniteDuration() : d;
         return absl::OkStatus();
       }},
      {"max_room_wait", "2m",
       "how long a load or call waits in line for memory that work in flight holds before RESOURCE_EXHAUSTED "
       "(a request that could never fit is refused at once; the client's deadline ends the wait sooner); "
       "0 = refuse at once",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         absl::Duration d;
         if (!absl::ParseDuration(v, &d) || d < absl::ZeroDuration()) {
           return bad(v, "a duration such as 2m (0: refuse at once)");
         }
         o.max_room_wait = d;
         return absl::OkStatus();
       }},
      {"tls_cert", "", "PEM certificate chain; with --tls_key enables TLS", text(&DaemonOptions::tls_cert)},
      {"tls_key", "", "PEM private key for --tls_cert", text(&DaemonOptions::tls_key)},
      {"tls_client_ca", "",
       "PEM CA certificates for mutual TLS: a client certificate must chain to one, and its subject or CN maps to "
       "a role in --auth_token_file (needs --tls_cert and --auth_token_file)",
       text(&DaemonOptions::tls_client_ca)},
      {"auth_token_file", "",
       "access file: lines 'ROLE token TOKEN', 'ROLE cn NAME' or 'ROLE subject DN' (ROLE read, run or admin); "
       "every call but health then needs a listed bearer token or client certificate; re-read when it changes",
       text(&DaemonOptions::auth_token_file)},
      {"reflection", "true", "serve gRPC server reflection",
       [](DaemonOptions& o, const std::string& v) -> absl::Status {
         absl::StatusOr<bool> b = parse_bool(v);
         if (!b.ok()) return b.status();
         o.reflection = *b;
         return absl::OkStatus();
       }},
      {"log_level", "info", "debug, info, warning or error",
       one_of(&DaemonOptions::log_level, {"debug", "info", "warning", "error"})},
      {"preload", "",
       "models to load before readiness turns SERVING: ID=PATH[,ID=PATH...] (a bare PATH is keyed by its path); "
       "if one fails the daemon exits 1",
       set_preload},
  };
  return *table;
}

std::string env_name(absl::string_view flag) {
  return absl::StrCat("DIFFUSIOND_", absl::AsciiStrToUpper(flag));
}

const Flag* find_flag(absl::string_view name) {
  for (const Flag& f : flags()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// Refuses device flags set (by flag or variable) for a device they do not
// apply to, rather than ignoring a setting the operator believes in.
absl::Status check_device_flags(const DaemonOptions& o, const std::set<std::string>& given) {
  if (o.device == "cpu") {
    for (const char* name : {"vram_budget", "vram_headroom"}) {
      if (given.count(name) == 0) continue;
      return absl::InvalidArgumentError(absl::StrCat("--", name, " (or ", env_name(name),
                                                     ") is set but --device is cpu; it applies to "
                                                     "--device cuda:N or sim"));
    }
  }
  if (o.device != "sim" && given.count("sim_device_memory") != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--sim_device_memory (or ", env_name("sim_device_memory"),
                                                   ") is set but --device is ", o.device,
                                                   "; it applies to --device sim only"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DaemonOptions> parse_daemon_options(
    const std::vector<std::string>& args, const std::function<const char*(const char*)>& getenv) {
  DaemonOptions options;
  std::set<std::string> given;  // flags set by a variable or on the command line
  for (const Flag& f : flags()) {
    const std::string var = env_name(f.name);
    if (const char* value = getenv(var.c_str()); value != nullptr) {
      if (absl::Status s = f.set(options, value); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("environment variable ", var, ": ", s.message()));
      }
      given.insert(f.name);
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    if (!absl::ConsumePrefix(&arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", args[i], "'"));
    }
    std::string name(arg), value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    }
    const Flag* f = find_flag(name);
    if (f == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    if (absl::Status s = f->set(options, value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", s.message()));
    }
    given.insert(f->name);
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key must be given together");
  }
  if (!options.tls_client_ca.empty() && options.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls_client_ca needs TLS: give --tls_cert and --tls_key too");
  }
  if (!options.tls_client_ca.empty() && options.auth_token_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca needs --auth_token_file, whose 'cn' and 'subject' lines give client certificates "
        "their roles");
  }
  // Port 0 picks a free port for each, so two of those differ.
  if (!options.health_listen.empty() && options.health_listen == options.listen &&
      !absl::EndsWith(options.listen, ":0")) {
    return absl::InvalidArgumentError("--health_listen must differ from --listen (it is a port of its own)");
  }
  DIFFUSIOND_RETURN_IF_ERROR(check_device_flags(options, given));
  return options;
}

std::optional<int> cuda_device_index(const DaemonOptions& options) {
  absl::string_view index = options.device;
  int n = 0;
  if (!absl::ConsumePrefix(&index, "cuda:") || !absl::SimpleAtoi(index, &n)) return std::nullopt;
  return n;
}

std::string daemon_options_help() {
  std::string out =
      "usage: diffusiond [--flag value | --flag=value]...\n\n"
      "Every flag can also be set by its environment variable; the command line wins.\n\n";
  for (const Flag& f : flags()) {
    absl::StrAppend(&out, "  --", f.name, " (", env_name(f.name), ", default ",
                    *f.default_text ? f.default_text : "none", ")\n      ", f.help, "\n");
  }
  return out;
}

}  // namespace diffusiond
