// diffusionctl's command line: every command's options, and every usage
// error refused before a call is made.
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "clients/diffusionctl/command_line.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond::ctl {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

absl::StatusOr<Invocation> parse(std::vector<std::string> args, const char* env = nullptr) {
  return parse_command_line(args, env);
}

template <typename T>
T options(std::vector<std::string> args) {
  absl::StatusOr<Invocation> inv = parse(std::move(args));
  EXPECT_THAT(inv, IsOk());
  if (!inv.ok() || !std::holds_alternative<T>(inv->command)) {
    ADD_FAILURE() << "not the expected command";
    return T{};
  }
  return std::get<T>(inv->command);
}

void expect_usage_error(std::vector<std::string> args, const std::string& message) {
  EXPECT_THAT(parse(std::move(args)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
}

TEST(CommandLine, AddressComesFromFlagThenEnvironmentThenDefault) {
  absl::StatusOr<Invocation> inv = parse({"ls"});
  ASSERT_THAT(inv, IsOk());
  EXPECT_EQ(inv->global.address, "localhost:50051");
  EXPECT_FALSE(inv->global.timeout.has_value());
  EXPECT_FALSE(inv->global.json);

  inv = parse({"ls"}, "daemon:7000");
  ASSERT_THAT(inv, IsOk());
  EXPECT_EQ(inv->global.address, "daemon:7000");

  inv = parse({"--address", "other:1", "ls"}, "daemon:7000");
  ASSERT_THAT(inv, IsOk());
  EXPECT_EQ(inv->global.address, "other:1");
}

TEST(CommandLine, GlobalFlagsGoAnywhereInEitherForm) {
  absl::StatusOr<Invocation> inv =
      parse({"ls", "--json", "--timeout=1m30s", "--tls_ca", "ca.pem", "--address=h:2"});
  ASSERT_THAT(inv, IsOk());
  EXPECT_TRUE(inv->global.json);
  EXPECT_EQ(inv->global.timeout, absl::Seconds(90));
  EXPECT_EQ(inv->global.tls_ca, "ca.pem");
  EXPECT_EQ(inv->global.address, "h:2");
  EXPECT_TRUE(std::holds_alternative<ListOptions>(inv->command));

  inv = parse({"--timeout", "2.5", "stats"});
  ASSERT_THAT(inv, IsOk());
  EXPECT_EQ(inv->global.timeout, absl::Milliseconds(2500));
  EXPECT_TRUE(std::holds_alternative<StatsOptions>(inv->command));

  inv = parse({"ls", "--token", "t0k", "--token_file=tok", "--tls_cert", "c.pem", "--tls_key", "c.key"});
  ASSERT_THAT(inv, IsOk());
  EXPECT_EQ(inv->global.token, "t0k");
  EXPECT_EQ(inv->global.token_file, "tok");
  EXPECT_EQ(inv->global.tls_cert, "c.pem");
  EXPECT_EQ(inv->global.tls_key, "c.key");
  EXPECT_THAT(parse({"ls", "--token="}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--token needs")));
}

TEST(CommandLine, Load) {
  LoadOptions o = options<LoadOptions>({"load", "z-image/transformer"});
  EXPECT_EQ(o.path, "z-image/transformer");
  EXPECT_EQ(o.model_id, "");
  EXPECT_EQ(o.fp8, v1::FP8_MODE_DEFAULT);
  EXPECT_EQ(o.compute_dtype, "");

  o = options<LoadOptions>(
      {"load", "m.safetensors", "--id", "z", "--fp8", "e5m2", "--compute_dtype", "bfloat16"});
  EXPECT_EQ(o.model_id, "z");
  EXPECT_EQ(o.fp8, v1::FP8_MODE_E5M2);
  EXPECT_EQ(o.compute_dtype, "bfloat16");
  EXPECT_EQ(options<LoadOptions>({"load", "m", "--fp8=off"}).fp8, v1::FP8_MODE_OFF);
  EXPECT_EQ(options<LoadOptions>({"load", "m", "--fp8=e4m3fn"}).fp8, v1::FP8_MODE_E4M3FN);
  EXPECT_EQ(options<LoadOptions>({"load", "m", "--fp8=default"}).fp8, v1::FP8_MODE_DEFAULT);

  expect_usage_error({"load", "m", "--fp8", "e4m3"},
                     "--fp8: 'e4m3' is not one of default, off, e4m3fn, e5m2");
  expect_usage_error({"load", "m", "--compute_dtype", "fp64"}, "--compute_dtype: 'fp64'");
  expect_usage_error({"load"}, "load takes PATH, got 0 arguments");
  expect_usage_error({"load", "a", "b"}, "got 2 arguments");
}

TEST(CommandLine, UnloadListStatsRelease) {
  UnloadOptions u = options<UnloadOptions>({"unload", "z"});
  EXPECT_EQ(u.model_id, "z");
  EXPECT_FALSE(u.wait);
  EXPECT_TRUE(options<UnloadOptions>({"unload", "--wait", "z"}).wait);
  expect_usage_error({"unload", "z", "--wait=yes"}, "--wait takes no value");
  expect_usage_error({"ls", "extra"}, "ls takes no arguments, got 1 argument");

  EXPECT_EQ(options<ReleaseOptions>({"release", "18446744073709551615"}).lease_id,
            18446744073709551615u);
  expect_usage_error({"release", "abc"}, "LEASE_ID: 'abc' is not a lease id");
}

TEST(CommandLine, MakeRoomAcceptsUnits) {
  MakeRoomOptions o = options<MakeRoomOptions>({"make-room", "1.5GiB"});
  EXPECT_EQ(o.bytes, int64_t{3} << 29);
  EXPECT_EQ(o.device, "cpu");
  o = options<MakeRoomOptions>({"make-room", "800MB", "--device", "cuda"});
  EXPECT_EQ(o.bytes, 800'000'000);
  EXPECT_EQ(o.device, "cuda");
  EXPECT_EQ(options<MakeRoomOptions>({"make-room", "4096"}).bytes, 4096);
  expect_usage_error({"make-room", "lots"}, "BYTES: 'lots' is not a size");
  expect_usage_error({"make-room", "1GiB", "--device", "tpu"},
                     "--device: 'tpu' is not one of cpu, cuda");
}

TEST(CommandLine, AvailableAndEvents) {
  EXPECT_FALSE(options<AvailableOptions>({"available"}).all);
  EXPECT_TRUE(options<AvailableOptions>({"available", "--all"}).all);
  EventsOptions e = options<EventsOptions>({"events"});
  EXPECT_EQ(e.count, 0);
  EXPECT_TRUE(e.progress);
  e = options<EventsOptions>({"events", "--count", "3", "--no_progress"});
  EXPECT_EQ(e.count, 3);
  EXPECT_FALSE(e.progress);
  expect_usage_error({"events", "--count", "0"}, "--count: '0' is not a positive integer");
  expect_usage_error({"available", "x"}, "available takes no arguments");
}

TEST(CommandLine, LeaseTtl) {
  LeaseOptions o = options<LeaseOptions>({"lease", "z"});
  EXPECT_EQ(o.model_id, "z");
  EXPECT_EQ(o.ttl, absl::Seconds(60));
  EXPECT_EQ(options<LeaseOptions>({"lease", "z", "--ttl", "10m"}).ttl, absl::Minutes(10));
  EXPECT_EQ(options<LeaseOptions>({"lease", "z", "--ttl", "90"}).ttl, absl::Seconds(90));
  expect_usage_error({"lease", "z", "--ttl", "-5s"},
                     "--ttl: '-5s' is not a positive, finite duration");
  expect_usage_error({"lease", "z", "--ttl", "soon"}, "--ttl: 'soon' is not a duration");
  expect_usage_error({"lease", "z", "--ttl", "inf"}, "positive, finite");
}

TEST(CommandLine, Health) {
  EXPECT_EQ(options<HealthOptions>({"health"}).service, "");
  EXPECT_EQ(options<HealthOptions>({"health", "diffusiond.v1.DenoiseService"}).service,
            "diffusiond.v1.DenoiseService");
}

TEST(CommandLine, StepNeedsBothFiles) {
  StepOptions o =
      options<StepOptions>({"step", "z", "--in", "a.safetensors", "--out", "b.safetensors"});
  EXPECT_EQ(o.model_id, "z");
  EXPECT_EQ(o.inputs_path, "a.safetensors");
  EXPECT_EQ(o.outputs_path, "b.safetensors");
  expect_usage_error({"step", "z", "--in", "a"}, "step needs --in FILE and --out FILE");
}

TEST(CommandLine, DenoiseFromNoise) {
  DenoiseOptions o = options<DenoiseOptions>({"denoise", "z", "--conditioning", "cap.safetensors",
                                              "--shape", "16,128,128", "--seed", "42", "--guidance",
                                              "5", "--shift", "3.5", "--scalars", "guidance=3.5,x=-1e-3",
                                              "--out", "lat.safetensors"});
  EXPECT_EQ(o.model_id, "z");
  EXPECT_EQ(o.conditioning_path, "cap.safetensors");
  EXPECT_THAT(o.scalars, ElementsAre(Pair("guidance", 3.5), Pair("x", -1e-3)));
  EXPECT_EQ(o.negative_path, "");
  EXPECT_EQ(o.latents_path, "");
  EXPECT_THAT(o.latent_shape, ElementsAre(16, 128, 128));
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.steps, 8);
  EXPECT_EQ(o.guidance_scale, 5.0);
  EXPECT_EQ(o.shift, 3.5);
  EXPECT_TRUE(o.sigmas.empty());
  EXPECT_EQ(o.out_path, "lat.safetensors");
}

TEST(CommandLine, DenoiseFromLatentsWithSigmas) {
  DenoiseOptions o =
      options<DenoiseOptions>({"denoise", "z", "--conditioning", "c", "--negative", "n", "--latents",
                               "l", "--sigmas", "1,0.75,0.5", "--out", "o"});
  EXPECT_EQ(o.negative_path, "n");
  EXPECT_EQ(o.latents_path, "l");
  EXPECT_TRUE(o.latent_shape.empty());
  EXPECT_THAT(o.sigmas, ElementsAre(1.0f, 0.75f, 0.5f));
  EXPECT_EQ(o.steps, 3);
  EXPECT_EQ(options<DenoiseOptions>(
                {"denoise", "z", "--conditioning", "c", "--latents", "l", "--steps", "4", "--out", "o"})
                .steps,
            4);
}

TEST(CommandLine, DenoiseWithASecondExpert) {
  const std::vector<std::string> base = {"denoise", "high", "--shape", "16,2,8,8", "--out", "o"};
  DenoiseOptions one = options<DenoiseOptions>(base);
  EXPECT_EQ(one.expert_2, "");
  EXPECT_EQ(one.boundary_ratio, 0.0);
  EXPECT_EQ(one.guidance_scale_2, 0.0);
  std::vector<std::string> args = base;
  for (const char* a : {"--expert_2", "low", "--boundary_ratio", "0.875", "--guidance_scale_2", "3"}) {
    args.push_back(a);
  }
  DenoiseOptions two = options<DenoiseOptions>(args);
  EXPECT_EQ(two.expert_2, "low");
  EXPECT_EQ(two.boundary_ratio, 0.875);
  EXPECT_EQ(two.guidance_scale_2, 3.0);
  args.resize(base.size() + 4);  // without --guidance_scale_2: the first's guidance
  EXPECT_EQ(options<DenoiseOptions>(args).guidance_scale_2, 0.0);
  args.back() = "1";  // the daemon's bound is inclusive: every step below t = 1000
  EXPECT_EQ(options<DenoiseOptions>(args).boundary_ratio, 1.0);
}

TEST(CommandLine, DenoiseRefusesASecondExpertsBadValues) {
  const std::vector<std::string> base = {"denoise", "high", "--shape", "16,8,8", "--out", "o"};
  auto with = [&base](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_usage_error(with({"--expert_2", "low"}), "--expert_2 needs --boundary_ratio R");
  expect_usage_error(with({"--boundary_ratio", "0.5"}), "need a second expert (--expert_2 ID)");
  expect_usage_error(with({"--guidance_scale_2", "2"}), "need a second expert (--expert_2 ID)");
  expect_usage_error(with({"--expert_2=", "--boundary_ratio", "0.5"}), "--expert_2: '' is not a model id");
  for (const char* ratio : {"0", "-0.5", "1.5"}) {
    expect_usage_error(with({"--expert_2", "low", "--boundary_ratio", ratio}),
                       std::string("--boundary_ratio: '") + ratio + "' is not in (0, 1]");
  }
  expect_usage_error(with({"--expert_2", "low", "--boundary_ratio", "nan"}), "--boundary_ratio: 'nan' is not a number");
  expect_usage_error(with({"--expert_2", "low", "--boundary_ratio", "0.9", "--guidance_scale_2", "-1"}),
                     "--guidance_scale_2: '-1' is not a guidance scale >= 0");
  expect_usage_error(with({"--expert_2", "low", "--boundary_ratio", "0.9", "--guidance_scale_2", "x"}),
                     "--guidance_scale_2: 'x' is not a number");
}

TEST(CommandLine, DenoiseRefusesInconsistentFlags) {
  const std::vector<std::string> base = {"denoise", "z", "--conditioning", "c", "--out", "o"};
  auto with = [&base](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_usage_error(base, "either --latents FILE or --shape C,H,W");
  expect_usage_error(with({"--latents", "l", "--shape", "1,2,3"}), "either --latents");
  expect_usage_error(with({"--latents", "l", "--seed", "1"}), "--seed draws noise for --shape");
  expect_usage_error(with({"--shape", "16,0,8"}), "--shape: '16,0,8' is not positive integers");
  expect_usage_error(with({"--shape", "4,4", "--seed", "-1"}), "--seed: '-1'");
  expect_usage_error(with({"--shape", "4", "--steps", "0"}),
                     "--steps: '0' is not an integer from 1");
  expect_usage_error(with({"--shape", "4", "--sigmas", "1,x"}), "--sigmas: '1,x'");
  expect_usage_error(with({"--shape", "4", "--sigmas", "1,0.5", "--steps", "3"}),
                     "--steps 3 disagrees with the 2 values of --sigmas");
  expect_usage_error(with({"--shape", "4", "--guidance", "nan"}),
                     "--guidance: 'nan' is not a number");
  expect_usage_error({"denoise", "z", "--shape", "4"}, "denoise needs --out FILE");
  expect_usage_error(with({"--shape", "4", "--scalars", "guidance"}), "--scalars: 'guidance' is not NAME=NUMBER");
  expect_usage_error(with({"--shape", "4", "--scalars", "=1"}), "--scalars: '=1'");
}

TEST(CommandLine, GenericUsageErrors) {
  expect_usage_error({}, "no command given");
  expect_usage_error({"frobnicate"}, "unknown command 'frobnicate'");
  expect_usage_error({"ls", "--bogus"}, "unknown flag '--bogus' for ls");
  expect_usage_error({"--wait", "unload", "z"}, "a command's flags come after it");
  expect_usage_error({"ls", "-x"}, "unknown flag '-x'");
  expect_usage_error({"ls", "--timeout"}, "--timeout needs a value (DURATION)");
  expect_usage_error({"ls", "--timeout", "0s"}, "--timeout: '0s' is not a positive");
  expect_usage_error({"ls", "--json", "--json"}, "--json is given twice");
  expect_usage_error({"load", "m", "--id", "a", "--id", "b"}, "--id is given twice");
  expect_usage_error({"--address=", "ls"}, "--address needs a HOST:PORT");
}

TEST(CommandLine, DoubleDashEndsFlags) {
  EXPECT_EQ(options<LoadOptions>({"load", "--", "--odd-name"}).path, "--odd-name");
}

TEST(CommandLine, HelpWinsOverMissingArguments) {
  absl::StatusOr<Invocation> inv = parse({"--help"});
  ASSERT_THAT(inv, IsOk());
  EXPECT_TRUE(inv->help);
  EXPECT_EQ(inv->help_command, "");
  inv = parse({"denoise", "-h"});
  ASSERT_THAT(inv, IsOk());
  EXPECT_TRUE(inv->help);
  EXPECT_EQ(inv->help_command, "denoise");
}

TEST(CommandLine, HelpNamesEveryCommandAndFlag) {
  const std::string help = help_text("");
  for (const char* word : {"load PATH",
                           "unload ID",
                           "ls",
                           "stats",
                           "make-room BYTES",
                           "lease ID",
                           "release LEASE_ID",
                           "health [SERVICE]",
                           "step MODEL_ID",
                           "denoise MODEL_ID",
                           "--id ID",
                           "--fp8 MODE",
                           "--compute_dtype DTYPE",
                           "--wait",
                           "--device DEVICE",
                           "--ttl DURATION",
                           "--in FILE",
                           "--out FILE",
                           "--conditioning FILE",
                           "--scalars K=V,...",
                           "--config FILE",
                           "--negative FILE",
                           "--latents FILE",
                           "--shape C,H,W",
                           "--seed N",
                           "--steps N",
                           "--guidance S",
                           "--shift X",
                           "--sigmas",
                           "--expert_2 ID",
                           "--boundary_ratio R",
                           "--guidance_scale_2 G",
                           "--address HOST:PORT",
                           "--timeout DURATION",
                           "--json",
                           "--tls_ca FILE",
                           "--token_file FILE",
                           "--help",
                           "DIFFUSIOND_ADDRESS",
                           "Exit status"}) {
    EXPECT_THAT(help, HasSubstr(word));
  }
  for (absl::string_view line : absl::StrSplit(help, '\n')) EXPECT_LE(line.size(), 80u) << line;
  EXPECT_THAT(help_text("lease"), HasSubstr("Usage: diffusionctl [GLOBAL FLAGS] lease ID [FLAGS]"));
  EXPECT_TRUE(is_command("make-room"));
  EXPECT_FALSE(is_command("rm"));
}

}  // namespace
}  // namespace diffusiond::ctl
