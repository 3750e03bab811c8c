// Daemon::drain() past work that cancellation cannot reach: a load blocked
// in an open that never returns (a hung network filesystem) must not hang
// the exit. The drain logs what still runs and ends the process with
// kDrainGaveUpExitStatus, which only a child process can show: each case
// runs as a death test, re-executing this binary ("threadsafe" style, as
// the parent holds gRPC and libtorch threads).
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "core/checkpoint/random_access_file.h"
#include "core/util/remove_tree.h"
#include "diffusiond/v1/model_service.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "server/log.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::TempDir;

constexpr absl::Duration kGrace = absl::Milliseconds(100);
constexpr absl::Duration kCancelWait = absl::Milliseconds(200);
// The process must be gone this long after drain() began: grace + cancel
// wait + a margin for the log line and _exit. SIGALRM kills it otherwise,
// which the test reports as the wrong way to die.
constexpr unsigned kExitWithinSeconds = 5;

// An open that never returns, as on a hung NFS mount; sets `entered` first.
FileOpener stuck_opener(std::atomic<bool>* entered) {
  return [entered](absl::string_view) -> absl::StatusOr<std::unique_ptr<RandomAccessFile>> {
    entered->store(true);
    for (;;) ::pause();
  };
}

// Runs in the death test's child: starts a daemon, sticks a load in its
// opener, drains. Returns only if drain() did (a failure).
void drain_past_a_load_stuck_in_open() {
  TempDir dir;  // the child's own; removed below, as _exit skips destructors
  const std::string models = dir.path("models");
  dir.write("models/stuck.safetensors", "any bytes: the open never returns");
  DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = "127.0.0.1:0";
  options.models_dir = models;
  options.ram_budget_bytes = int64_t{64} << 20;
  options.threads = 1;
  options.drain_grace = kGrace;
  std::atomic<bool> stuck{false};
  DaemonSeams seams;
  seams.file_opener = stuck_opener(&stuck);
  seams.cancel_wait = kCancelWait;
  static const Log log(LogLevel::kInfo);
  absl::StatusOr<std::unique_ptr<Daemon>> started = Daemon::start(options, log, seams);
  if (!started.ok()) {
    std::fprintf(stderr, "cannot start: %s\n", std::string(started.status().message()).c_str());
    return;
  }
  // Never destroyed: its load queue's thread is stuck for good.
  Daemon* daemon = started->release();
  // Through gRPC, so the load runs where the daemon runs loads: on its load
  // queue, whose destructor would join the stuck thread.
  std::thread([port = daemon->grpc_port()] {
    auto stub = v1::ModelService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    v1::LoadModelRequest request;
    request.set_path("stuck.safetensors");
    std::unique_ptr<grpc::ClientReader<v1::LoadModelEvent>> reader = stub->LoadModel(&context, request);
    v1::LoadModelEvent event;
    while (reader->Read(&event)) {
    }
    (void)reader->Finish();
  }).detach();
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (!stuck.load() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  if (!stuck.load()) {
    std::fprintf(stderr, "the load never reached the opener\n");
    return;
  }
  remove_tree(dir.path());
  ::alarm(kExitWithinSeconds);
  daemon->drain();
  std::fprintf(stderr, "drain() returned\n");
}

TEST(DaemonDrainDeathTest, ALoadStuckInIoPastTheCancelWaitEndsTheProcessNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(drain_past_a_load_stuck_in_open(), ::testing::ExitedWithCode(kDrainGaveUpExitStatus),
              "level=warning msg=\"drain grace over; cancelling in-flight work\".*\n"
              ".*level=error msg=\"work still running after cancellation; exiting without waiting for it\" "
              "jobs=1 loading=stuck.safetensors in_use=\"\" seconds=[0-9.]+ exit_status=3");
}

}  // namespace
}  // namespace diffusiond
