#include "server/daemon_options.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_env.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::HasSubstr;

using Env = ::diffusiond::testing::FakeEnv;

TEST(DaemonOptions, DefaultsWithNothingSet) {
  Env env;
  absl::StatusOr<DaemonOptions> o = parse_daemon_options({}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->listen, "0.0.0.0:50051");
  EXPECT_FALSE(o->ram_budget_bytes.has_value());
  EXPECT_EQ(o->max_message_bytes, 256 << 20);
  EXPECT_EQ(o->drain_grace, absl::Seconds(30));
  EXPECT_TRUE(o->reflection);
  EXPECT_FALSE(o->threads.has_value());
}

TEST(DaemonOptions, ThreadsIsAutoOrABoundedCount) {
  Env env;
  absl::StatusOr<DaemonOptions> o = parse_daemon_options({"--threads", "6"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->threads, 6);
  env.vars["DIFFUSIOND_THREADS"] = "3";
  o = parse_daemon_options({"--threads=auto"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_FALSE(o->threads.has_value());
  EXPECT_THAT(parse_daemon_options({"--threads", "0"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--threads: '0'")));
}

TEST(DaemonOptions, EnvironmentAppliesAndTheCommandLineWins) {
  Env env;
  env.vars["DIFFUSIOND_RAM_BUDGET"] = "12GiB";
  env.vars["DIFFUSIOND_LISTEN"] = "127.0.0.1:1";
  env.vars["DIFFUSIOND_REFLECTION"] = "false";
  absl::StatusOr<DaemonOptions> o =
      parse_daemon_options({"--listen", "127.0.0.1:2", "--drain_grace=5s", "--fp8", "off"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(*o->ram_budget_bytes, int64_t{12} << 30);
  EXPECT_EQ(o->listen, "127.0.0.1:2");
  EXPECT_FALSE(o->reflection);
  EXPECT_EQ(o->drain_grace, absl::Seconds(5));
  EXPECT_EQ(o->fp8, "off");
}

TEST(DaemonOptions, MaxRoomWaitIsADurationWithZeroForNone) {
  Env env;
  absl::StatusOr<DaemonOptions> o = parse_daemon_options({}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->max_room_wait, absl::Minutes(2));
  o = parse_daemon_options({"--max_room_wait=0"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->max_room_wait, absl::ZeroDuration());
  env.vars["DIFFUSIOND_MAX_ROOM_WAIT"] = "45s";
  o = parse_daemon_options({}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->max_room_wait, absl::Seconds(45));
  EXPECT_THAT(parse_daemon_options({"--max_room_wait", "-1s"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_room_wait")));
}

TEST(DaemonOptions, LoadTimeoutIsADurationWithZeroForNoLimit) {
  Env env;
  absl::StatusOr<DaemonOptions> o = parse_daemon_options({}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->load_timeout, absl::Minutes(10));
  o = parse_daemon_options({"--load_timeout", "90s"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->load_timeout, absl::Seconds(90));
  o = parse_daemon_options({"--load_timeout=0"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->load_timeout, absl::InfiniteDuration());
  env.vars["DIFFUSIOND_LOAD_TIMEOUT"] = "1h";
  o = parse_daemon_options({}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->load_timeout, absl::Hours(1));
  EXPECT_THAT(parse_daemon_options({"--load_timeout", "-1s"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--load_timeout: '-1s' is not a duration such as 10m (0: no limit)")));
  env.vars["DIFFUSIOND_LOAD_TIMEOUT"] = "ten minutes";
  EXPECT_THAT(parse_daemon_options({}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("environment variable DIFFUSIOND_LOAD_TIMEOUT: 'ten minutes' is not a duration")));
}

TEST(DaemonOptions, BadValuesNameTheFlagOrVariable) {
  Env env;
  EXPECT_THAT(parse_daemon_options({"--ram_budget", "lots"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--ram_budget: 'lots'")));
  EXPECT_THAT(parse_daemon_options({"--device", "tpu"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--device: 'tpu' is not cpu, cuda, cuda:N (N a GPU index) or sim")));
  EXPECT_THAT(parse_daemon_options({"--colour", "blue"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown flag --colour")));
  EXPECT_THAT(parse_daemon_options({"--listen"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a value")));
  EXPECT_THAT(parse_daemon_options({"--tls_cert", "c.pem"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("together")));
  EXPECT_THAT(parse_daemon_options({"--tls_client_ca", "ca.pem", "--auth_token_file", "t"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls_client_ca needs TLS")));
  EXPECT_THAT(
      parse_daemon_options({"--tls_cert", "c.pem", "--tls_key", "k.pem", "--tls_client_ca", "ca.pem"}, env.getenv()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls_client_ca needs --auth_token_file")));
  absl::StatusOr<DaemonOptions> mtls = parse_daemon_options(
      {"--tls_cert", "c.pem", "--tls_key", "k.pem", "--tls_client_ca", "ca.pem", "--auth_token_file", "t"},
      env.getenv());
  ASSERT_THAT(mtls, IsOk());
  EXPECT_EQ(mtls->tls_client_ca, "ca.pem");
  EXPECT_EQ(mtls->auth_token_file, "t");
  EXPECT_THAT(parse_daemon_options({"--health_listen", "0.0.0.0:50051"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--health_listen must differ")));
  env.vars["DIFFUSIOND_MAX_CONCURRENT_DENOISE"] = "0";
  EXPECT_THAT(parse_daemon_options({}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("environment variable DIFFUSIOND_MAX_CONCURRENT_DENOISE")));
}

TEST(DaemonOptions, DeviceIsCpuCudaNOrSim) {
  Env env;
  absl::StatusOr<DaemonOptions> o = parse_daemon_options({}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->device, "cpu");
  EXPECT_EQ(cuda_device_index(*o), std::nullopt);
  EXPECT_EQ(o->vram_headroom_bytes, int64_t{2} << 30);
  EXPECT_EQ(o->sim_device_memory_bytes, int64_t{4} << 30);
  o = parse_daemon_options({"--device", "cuda"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->device, "cuda:0");
  EXPECT_EQ(cuda_device_index(*o), 0);
  o = parse_daemon_options({"--device=cuda:3", "--vram_budget", "20GiB", "--vram_headroom", "1GiB"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(cuda_device_index(*o), 3);
  EXPECT_EQ(o->vram_budget_bytes, int64_t{20} << 30);
  EXPECT_EQ(o->vram_headroom_bytes, int64_t{1} << 30);
  o = parse_daemon_options({"--device", "sim", "--sim_device_memory", "64MiB", "--vram_budget", "auto"},
                           env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->device, "sim");
  EXPECT_EQ(cuda_device_index(*o), std::nullopt);
  EXPECT_EQ(o->sim_device_memory_bytes, 64 << 20);
  EXPECT_FALSE(o->vram_budget_bytes.has_value());
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:+1", "cuda:1024", "gpu"}) {
    EXPECT_THAT(parse_daemon_options({"--device", bad}, env.getenv()),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cuda:N (N a GPU index)")))
        << bad;
  }
  EXPECT_THAT(parse_daemon_options({"--device", "sim", "--sim_device_memory", "0"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--sim_device_memory: '0' is not a positive")));
}

TEST(DaemonOptions, DeviceFlagsForAnotherDeviceAreRefused) {
  Env env;
  EXPECT_THAT(parse_daemon_options({"--vram_budget", "8GiB"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--vram_budget (or DIFFUSIOND_VRAM_BUDGET) is set but --device is cpu")));
  // Even `auto`, said explicitly, is a setting for a device there is not.
  EXPECT_THAT(parse_daemon_options({"--device", "cpu", "--vram_budget", "auto"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--vram_budget")));
  EXPECT_THAT(parse_daemon_options({"--vram_headroom", "1GiB"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--vram_headroom (or DIFFUSIOND_VRAM_HEADROOM)")));
  EXPECT_THAT(parse_daemon_options({"--device", "cuda:0", "--sim_device_memory", "1GiB"}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--sim_device_memory (or DIFFUSIOND_SIM_DEVICE_MEMORY) is set but --device is "
                                 "cuda:0; it applies to --device sim only")));
  env.vars["DIFFUSIOND_VRAM_BUDGET"] = "8GiB";
  EXPECT_THAT(parse_daemon_options({}, env.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--device is cpu")));
  EXPECT_THAT(parse_daemon_options({"--device", "sim"}, env.getenv()), IsOk());
}

TEST(DaemonOptions, PreloadIsAListOfIdEqualsPath) {
  Env env;
  absl::StatusOr<DaemonOptions> o = parse_daemon_options({}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_TRUE(o->preload.empty());

  o = parse_daemon_options({"--preload", "z=z-image/transformer, vae = z-image/vae,flux.safetensors"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->preload, (std::vector<PreloadModel>{
                            {"z", "z-image/transformer"}, {"vae", "z-image/vae"}, {"", "flux.safetensors"}}));

  // The ConfigMap's empty default means none; the command line wins over it.
  env.vars["DIFFUSIOND_PRELOAD"] = "";
  o = parse_daemon_options({}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_TRUE(o->preload.empty());
  env.vars["DIFFUSIOND_PRELOAD"] = "a=demo";
  o = parse_daemon_options({"--preload=b=demo"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->preload, (std::vector<PreloadModel>{{"b", "demo"}}));

  for (const char* bad : {"a=demo,,b=demo", "=demo", "a=", "a=demo,a=other", "demo,demo"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(parse_daemon_options({"--preload", bad}, Env().getenv()),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--preload: ")));
  }
  EXPECT_THAT(parse_daemon_options({}, Env{{{"DIFFUSIOND_PRELOAD", "x="}}}.getenv()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("DIFFUSIOND_PRELOAD")));
}

TEST(DaemonOptions, HelpListsEveryFlagAndVariable) {
  const std::string help = daemon_options_help();
  for (const char* flag : {"listen", "metrics_listen", "models_dir", "ram_budget", "vram_budget", "vram_headroom",
                           "sim_device_memory", "device", "compute_dtype", "fp8", "max_message_bytes", "threads",
                           "max_concurrent_denoise", "max_queued_denoise", "drain_grace", "load_timeout",
                           "tls_cert", "tls_key", "reflection", "log_level"}) {
    EXPECT_THAT(help, HasSubstr(std::string("--") + flag + " (DIFFUSIOND_")) << flag;
  }
  for (const char* flag : {"tls_client_ca", "auth_token_file", "narrow_weights"}) {
    EXPECT_THAT(help, HasSubstr(std::string("--") + flag + " (DIFFUSIOND_")) << flag;
  }
  EXPECT_THAT(help, HasSubstr("--health_listen (DIFFUSIOND_HEALTH_LISTEN,"));
  Env env;
  absl::StatusOr<DaemonOptions> o = parse_daemon_options({"--help"}, env.getenv());
  ASSERT_THAT(o, IsOk());
  EXPECT_TRUE(o->help);
}

}  // namespace
}  // namespace diffusiond
