// DaemonOptions: the daemon's configuration from command-line flags and
// their environment-variable equivalents (DIFFUSIOND_<FLAG IN CAPITALS>,
// for Kubernetes). A flag given on the command line wins over the
// environment. Sizes accept units (12GiB, 800MB); durations use Abseil's
// syntax (30s, 2m).
#ifndef DIFFUSIOND_SERVER_DAEMON_OPTIONS_H_
#define DIFFUSIOND_SERVER_DAEMON_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace diffusiond {

// A model --preload loads before the daemon turns ready.
struct PreloadModel {
  std::string model_id;  // empty: the canonical path, as LoadModel without an id
  std::string path;      // inside --models_dir
  bool operator==(const PreloadModel& other) const { return model_id == other.model_id && path == other.path; }
};

struct DaemonOptions {
  std::string listen = "0.0.0.0:50051";          // gRPC address
  std::string metrics_listen = "0.0.0.0:9464";   // Prometheus /metrics address
  // A plaintext port serving only grpc.health.v1.Health (empty: none), for
  // kubelet gRPC probes, which cannot speak TLS, when --tls_cert is on.
  std::string health_listen;
  std::string models_dir = "/models";            // loads are confined to it
  std::optional<int64_t> ram_budget_bytes;       // empty: auto (docs/memory-budget.md)
  // Where denoisers run: "cpu", "cuda:N" (a bare "cuda" is read as cuda:0)
  // or "sim", the simulated device (core/vram/sim_device.h) for tests.
  std::string device = "cpu";
  std::optional<int64_t> vram_budget_bytes;      // empty: auto = free device memory - headroom
  // Device memory that --vram_budget auto leaves out: the CUDA context,
  // cuBLAS workspaces, allocator fragmentation, anything not accounted.
  int64_t vram_headroom_bytes = int64_t{2} << 30;
  int64_t sim_device_memory_bytes = int64_t{4} << 30;  // the simulated device's capacity
  std::string compute_dtype;                     // empty: auto (float32 on sim); resolve_compute_dtype()
  std::string fp8 = "e4m3fn";                    // default FP8 storage: e4m3fn | e5m2 | off
  // Weights stored narrower than the compute dtype stay so in RAM and are
  // upcast per use (docs/configuration.md#narrow-weights).
  bool narrow_weights = true;
  int64_t max_message_bytes = int64_t{256} << 20;
  std::optional<int> threads;                    // empty: auto (cgroup CPU quota or cores)
  int max_concurrent_denoise = 1;
  int max_queued_denoise = 8;  // waiting beyond those running; more are refused
  absl::Duration drain_grace = absl::Seconds(30);
  // A load still running this long is cancelled (DEADLINE_EXCEEDED) and its
  // memory freed; --load_timeout 0 gives InfiniteDuration(), no limit.
  absl::Duration load_timeout = absl::Minutes(10);
  // How long a load or call waits in line for memory work in flight holds
  // (docs/memory-budget.md); 0 refuses at once.
  absl::Duration max_room_wait = absl::Minutes(2);
  std::string tls_cert, tls_key;                 // both or neither
  // PEM CA certificates: a client certificate, when presented, must chain to
  // one, and its subject or CN gives the caller a role from
  // --auth_token_file. Needs TLS and --auth_token_file. Empty: none asked.
  std::string tls_client_ca;
  // The access file (server/access_table.h): roles of bearer tokens and
  // client certificates; re-read when it changes. Empty: every call is
  // allowed (no authentication).
  std::string auth_token_file;
  bool reflection = true;
  std::string log_level = "info";                // debug | info | warning | error
  // Loaded in this order before readiness turns SERVING; one that fails
  // ends the start (docs/configuration.md#preloading).
  std::vector<PreloadModel> preload;
  bool help = false;                             // --help was given
};

// Reads `args` (without the program name) over the environment, which
// `getenv` reads (std::getenv in production). INVALID_ARGUMENT naming the
// flag or variable and the value for anything unknown or malformed, and for
// device flags that do not apply to --device (--vram_budget or
// --vram_headroom with cpu, --sim_device_memory without sim).
absl::StatusOr<DaemonOptions> parse_daemon_options(
    const std::vector<std::string>& args,
    const std::function<const char*(const char*)>& getenv);

// The index N of a --device cuda:N; empty for cpu and sim.
std::optional<int> cuda_device_index(const DaemonOptions& options);

// The complete --help text: every flag, its variable, default and meaning.
std::string daemon_options_help();

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_DAEMON_OPTIONS_H_
