#include "server/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/cpu/blas_kernels.h"
#include "core/memory/allocator.h"
#include "core/memory/default_budget.h"
#include "core/memory/default_threads.h"
#include "core/precision/compute_dtype.h"
#include "core/util/bytes.h"
#include "core/util/status_macros.h"
#include "grpc/health/v1/health.pb.h"
#include "kernels/onednn_cpu.h"
#include "kernels/torch_compat.h"
#include "server/rpc_metrics.h"
#include "server/server_credentials.h"
#include "server/tier_stats.h"

namespace diffusiond {
namespace {

// Kubernetes stops routing to a pod some time after its readiness fails;
// until then new calls still arrive and are served.
constexpr absl::Duration kMaxAcceptGrace = absl::Seconds(5);
constexpr int kLoadThreads = 2, kAdminThreads = 2, kQueuedPerPool = 32;

absl::StatusOr<int64_t> ram_budget(const DaemonOptions& options, const Log& log) {
  DIFFUSIOND_ASSIGN_OR_RETURN(MachineMemory machine, probe_machine_memory());
  const int64_t automatic = default_ram_budget_bytes(machine);
  if (!options.ram_budget_bytes.has_value()) return automatic;
  if (*options.ram_budget_bytes > automatic) {
    log.warning("ram budget above the automatic one; the process may be OOM-killed before the budget refuses",
                absl::StrCat("ram_budget=", *options.ram_budget_bytes, " auto=", automatic));
  }
  return *options.ram_budget_bytes;
}

// Applies --threads (or the machine's default) to libtorch's intra-op pool,
// which every forward's matmuls and element-wise loops share.
absl::StatusOr<int> apply_compute_threads(const DaemonOptions& options) {
  int threads = 0;
  if (options.threads.has_value()) {
    threads = *options.threads;
  } else {
    DIFFUSIOND_ASSIGN_OR_RETURN(MachineCpus machine, probe_machine_cpus());
    threads = default_compute_threads(machine);
  }
  compat::set_compute_threads(threads);
  return threads;
}

void warn_about_blas(const Log& log, const BlasChoice& blas) {
  // main() corrected a generic fallback already, unless the user chose the
  // kernels or OpenBLAS ignored the correction: say what it costs.
  if (blas.fallback) {
    log.warning("OpenBLAS runs generic kernels on a CPU that runs better ones; float32 steps are several times slower",
                absl::StrCat("blas=", logfmt_value(blas.summary)));
  } else if (blas.chosen_by == "diffusiond") {
    log.info("blas", absl::StrCat("detail=", logfmt_value(blas.summary)));
  }
  if (std::string(compat::blas_threading()) == "pthreads") {
    log.warning("OpenBLAS runs its own thread pool beside libtorch's; steps can be much slower on few cores",
                "fix=\"bash deploy/select-openmp-blas.sh (libopenblas0-openmp)\"");
  }
}

// The ready line's auth fields: off, or what the access file lists.
std::string auth_fields(const Authorizer* authorizer, const DaemonOptions& options) {
  if (authorizer == nullptr) return " auth=off";
  const std::shared_ptr<const AccessTable> table = authorizer->table();
  return absl::StrCat(" auth=on auth_tokens=", table->token_count(), " auth_certificates=", table->certificate_count(),
                      " client_certificates=", options.tls_client_ca.empty() ? "off" : "on");
}

std::string host_of(const std::string& address) { return address.substr(0, address.rfind(':')); }

// The ready line's device fields: where denoisers run and, with a device,
// its VRAM budget.
std::string device_fields(const DaemonDevice& d) {
  if (d.device == nullptr) return " device=cpu";
  const int64_t budget = d.vram_budget->capacity_bytes();
  return absl::StrCat(" device=", d.device->name(), " vram_budget_bytes=", budget,
                      " vram_budget=", logfmt_value(format_bytes(budget)));
}

// The placed models, for the placements' metrics.
std::vector<PlacementFigures> placements_of(const Engine& engine) {
  std::vector<PlacementFigures> out;
  for (const ModelInfo& info : engine.list()) {
    if (info.vram_plan.empty()) continue;
    out.push_back(PlacementFigures{info.model_id, info.vram_streamed_bytes_per_step});
  }
  return out;
}

// Loads --preload's models in order, before the daemon turns ready, so that a
// replica joins its Service (or a proxy's ring) with them in its cache. The
// first failure is returned naming the entry. A SIGTERM meanwhile waits for
// the preload (main reads signals once start() returns); --load_timeout
// bounds each model.
absl::Status preload_models(Engine& engine, const DaemonOptions& options, const Log& log) {
  for (const PreloadModel& m : options.preload) {
    const absl::Time start = absl::Now();
    ModelLoadRequest request;
    request.path = m.path;
    request.model_id = m.model_id;
    absl::StatusOr<ModelInfo> info = engine.load(request);
    const std::string entry = m.model_id.empty() ? m.path : absl::StrCat(m.model_id, "=", m.path);
    if (!info.ok()) {
      return absl::Status(info.status().code(), absl::StrCat("--preload ", entry, ": ", info.status().message()));
    }
    log.info("preloaded", absl::StrCat("model=", logfmt_value(info->model_id), " path=", logfmt_value(m.path),
                                       " seconds=", absl::ToDoubleSeconds(absl::Now() - start)));
  }
  return absl::OkStatus();
}

// Linking grpc++_reflection registers its plugin with every ServerBuilder
// from a static initialiser, so not asking for it is not enough: with
// --reflection=false this option takes it out again.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const auto& p) { return p->name() == "proto_server_reflection"; }),
                   plugins->end());
  }
};

}  // namespace

Daemon::Daemon(const DaemonOptions& options, const Log& log, const DaemonSeams& seams)
    : options_(options), log_(log), seams_(seams), clock_(seams.clock != nullptr ? seams.clock : real_clock()) {}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::start(const DaemonOptions& options, const Log& log,
                                                      const DaemonSeams& seams) {
  std::unique_ptr<Daemon> d(new Daemon(options, log, seams));
  DIFFUSIOND_RETURN_IF_ERROR(d->start_serving());
  return d;
}

absl::Status Daemon::start_serving() {
  // First, so that a device that cannot be opened is the only thing said.
  DIFFUSIOND_ASSIGN_OR_RETURN(device_, open_daemon_device(options_));
  if (!options_.auth_token_file.empty()) {
    absl::StatusOr<std::unique_ptr<Authorizer>> authorizer = Authorizer::create(options_.auth_token_file);
    if (!authorizer.ok()) {
      return absl::Status(authorizer.status().code(),
                          absl::StrCat("--auth_token_file ", authorizer.status().message()));
    }
    authorizer_ = *std::move(authorizer);
  }
  if (device_.device != nullptr && options_.vram_budget_bytes.has_value() &&
      *options_.vram_budget_bytes > device_.auto_budget_bytes) {
    log_.warning("vram budget above the automatic one; the device may run out of memory before the budget refuses",
                 absl::StrCat("vram_budget=", *options_.vram_budget_bytes, " auto=", device_.auto_budget_bytes));
  }
  if (!tune_allocator_for_serving()) {
    log_.warning("the heap allocator refused its serving configuration; RSS may stay above what calls were admitted",
                 absl::StrCat("allocator=\"", allocator_name(), "\""));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t ram, ram_budget(options_, log_));
  ram_budget_ = std::make_unique<Budget>(Device::kCpu, ram);
  DIFFUSIOND_ASSIGN_OR_RETURN(const int threads, apply_compute_threads(options_));
  // main() ran ensure_blas_kernels; the same probe now says what it left.
  const BlasChoice blas = choose_blas_kernels(probe_blas_kernels());
  warn_about_blas(log_, blas);

  BuildInfo build;
  build.version = DIFFUSIOND_VERSION;
  build.torch_version = TORCH_VERSION;
  build.cuda = compat::kHaveCuda;
  build.compute_threads = threads;
  build.allocator = allocator_name();
  build.blas_library = blas.library;
  build.blas_core = blas.corename.empty() ? "unknown" : blas.corename;
  build.blas_chosen_by = blas.chosen_by;
  build.blas_fallback = blas.fallback;
  // The metrics read the cache through the engine, which exists only later;
  // until then (and after drain) they report no cache state.
  metrics_ = std::make_unique<DaemonMetrics>(
      build, [this]() -> CacheStats { return engine_ != nullptr ? both_tiers_stats(*engine_) : CacheStats{}; },
      [this]() { return engine_ != nullptr ? placements_of(*engine_) : std::vector<PlacementFigures>{}; },
      [this]() { return queue_figures(); });
  const auto log_line = [this](absl::string_view line) { log_.info("cache", line); };
  event_log_ = std::make_unique<CacheEventLog>(ram_budget_.get(), log_line);
  events_ = std::make_unique<EngineEventFeed>();
  observers_ = std::make_unique<CacheObserverList>(
      std::vector<CacheObserver*>{event_log_.get(), metrics_.get(), events_->ram_observer()});

  EngineOptions eo;
  eo.models_dir = options_.models_dir;
  eo.ram_budget = ram_budget_.get();
  eo.observer = observers_.get();
  eo.clock = clock_;
  eo.file_opener = seams_.file_opener;
  eo.load_timeout = options_.load_timeout;
  eo.max_room_wait = options_.max_room_wait;
  eo.on_load_progress = [feed = events_.get()](const std::string& model_id, const LoadProgress& progress) {
    feed->on_load_progress(model_id, progress);
  };
  if (device_.device != nullptr) {
    vram_event_log_ = std::make_unique<CacheEventLog>(device_.vram_budget.get(), log_line);
    vram_observers_ = std::make_unique<CacheObserverList>(
        std::vector<CacheObserver*>{vram_event_log_.get(), metrics_->vram_observer(), events_->vram_observer()});
    eo.device = device_.device.get();
    eo.vram_budget = device_.vram_budget.get();
    eo.vram_observer = vram_observers_.get();
    // Each FP8 layer's matmul choice, once per placement.
    eo.note = [this](const std::string& line) { log_.info("placement", absl::StrCat("detail=", logfmt_value(line))); };
  }
  const ComputeDtypeChoice dtype = resolve_compute_dtype(options_, detect_cpu_features());
  eo.compute_dtype = dtype.dtype;
  eo.fp8 = Fp8Options{};
  if (Fp8Format f; parse_fp8_format(options_.fp8.c_str(), &f)) eo.fp8.format = f;
  eo.keep_narrow_weights = options_.narrow_weights;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::create(eo);
  if (!engine.ok()) return absl::Status(engine.status().code(), absl::StrCat("--models_dir: ", engine.status().message()));
  engine_ = *std::move(engine);
  CatalogOptions co;
  co.models_dir = options_.models_dir;
  co.compute_dtype = eo.compute_dtype;
  catalog_ = std::make_unique<ModelCatalog>(co);

  {
    MutexLock lock(&queues_mu_);
    load_queue_ = std::make_unique<WorkQueue>("load", kLoadThreads, kQueuedPerPool);
    compute_queue_ =
        std::make_unique<WorkQueue>("denoise", options_.max_concurrent_denoise, options_.max_queued_denoise);
    admin_queue_ = std::make_unique<WorkQueue>("unload", kAdminThreads, kQueuedPerPool);
  }
  ServiceDeps deps{engine_.get(),  load_queue_.get(), compute_queue_.get(), admin_queue_.get(),
                   metrics_.get(), events_.get(),     catalog_.get()};
  model_service_ = std::make_unique<ModelServiceImpl>(deps);
  denoise_service_ = std::make_unique<DenoiseServiceImpl>(deps);
  pipeline_service_ = std::make_unique<PipelineServiceImpl>(deps, options_.models_dir);
  cache_service_ = std::make_unique<CacheServiceImpl>(deps);

  DIFFUSIOND_RETURN_IF_ERROR(start_grpc());
  absl::StatusOr<std::unique_ptr<MetricsServer>> metrics_server = MetricsServer::start(options_.metrics_listen, *metrics_);
  if (!metrics_server.ok()) {
    drain();
    return absl::Status(metrics_server.status().code(),
                        absl::StrCat("--metrics_listen: ", metrics_server.status().message()));
  }
  metrics_server_ = *std::move(metrics_server);
  housekeeping_ = std::thread([this] { housekeeping_until_stopped(); });

  if (!options_.preload.empty()) {
    // Liveness serves meanwhile (a startup probe on readiness waits); the
    // address lets a watcher reach the port before the ready line.
    log_.info("preloading", absl::StrCat("listen=", host_of(options_.listen), ":", grpc_port_,
                                         " metrics_listen=", host_of(options_.metrics_listen), ":",
                                         metrics_server_->port(), " models=", options_.preload.size()));
    if (absl::Status s = preload_models(*engine_, options_, log_); !s.ok()) {
      drain();
      return s;
    }
  }
  set_ready(true);
  const std::string health_listen =
      health_port_ != 0 ? absl::StrCat(" health_listen=", host_of(options_.health_listen), ":", health_port_) : "";
  // What bf16 CPU products run on (kernels/onednn_cpu.h): oneDNN's version
  // and ISA, "off" in a build without it.
  const std::string onednn = onednn_description();
  log_.info("ready",
            absl::StrCat("listen=", host_of(options_.listen), ":", grpc_port_,
                         " metrics_listen=", host_of(options_.metrics_listen), ":", metrics_server_->port(),
                         " models_dir=", logfmt_value(options_.models_dir), " ram_budget_bytes=", ram,
                         " ram_budget=", logfmt_value(format_bytes(ram)), device_fields(device_), " fp8=", options_.fp8,
                         " narrow_weights=", options_.narrow_weights ? "true" : "false",
                         " compute_dtype=", compute_dtype_name(eo.compute_dtype),
                         " compute_dtype_chosen_by=", logfmt_value(dtype.chosen_by), " threads=", threads,
                         " allocator=", logfmt_value(build.allocator), " blas_threads=", compat::blas_threading(),
                         " blas_core=", logfmt_value(build.blas_core), " blas_chosen_by=", build.blas_chosen_by,
                         " onednn=", logfmt_value(onednn.empty() ? "off" : onednn),
                         " tls=", options_.tls_cert.empty() ? "off" : "on", auth_fields(authorizer_.get(), options_),
                         health_listen, " version=", DIFFUSIOND_VERSION));
  return absl::OkStatus();
}

absl::Status Daemon::start_grpc() {
  DIFFUSIOND_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds,
                              server_credentials(options_, authorizer_.get(), metrics_.get(), log_));
  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's health service does not use the generated health messages; using
  // them here links their descriptors, so reflection can describe Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  if (options_.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!options_.reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  // gRPC turns SO_REUSEPORT on by default: a second daemon on a served port
  // then starts "ready" and takes half the new connections. Refuse instead,
  // as the metrics port does.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options_.listen, creds, &grpc_port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options_.max_message_bytes));
  builder.RegisterService(model_service_.get());
  builder.RegisterService(denoise_service_.get());
  builder.RegisterService(pipeline_service_.get());
  builder.RegisterService(cache_service_.get());
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(rpc_metrics_interceptor(metrics_.get()));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || grpc_port_ == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("--listen ", options_.listen, ": cannot listen there"));
  }
  if (!options_.health_listen.empty()) {
    // Kubelet gRPC probes cannot use TLS, so with TLS on they need a
    // plaintext port; a second server, so that nothing but Health is
    // reachable without TLS (gRPC adds its default health service to every
    // server once enabled; reflection is taken out). gRPC adds that service
    // only once the server starts, and refuses to build one with no service
    // yet: the generic service (UNIMPLEMENTED for any other method) is one.
    grpc::ServerBuilder health;
    health.SetOption(std::make_unique<WithoutReflection>());
    health_unimplemented_ = std::make_unique<grpc::CallbackGenericService>();
    health.RegisterCallbackGenericService(health_unimplemented_.get());
    health.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    health.AddListeningPort(options_.health_listen, grpc::InsecureServerCredentials(), &health_port_);
    health_server_ = health.BuildAndStart();
    if (health_server_ == nullptr || health_port_ == 0) {
      health_server_.reset();
      server_->Shutdown();
      server_.reset();
      return absl::UnavailableError(absl::StrCat("--health_listen ", options_.health_listen, ": cannot listen there"));
    }
  }
  set_ready(false);
  set_health("liveness", true);
  return absl::OkStatus();
}

void Daemon::set_health(const std::string& service, bool serving) {
  for (grpc::Server* s : {server_.get(), health_server_.get()}) {
    if (s != nullptr) s->GetHealthCheckService()->SetServingStatus(service, serving);
  }
}

void Daemon::set_ready(bool ready) {
  ready_ = ready;
  metrics_->set_ready(ready);
  set_health("", ready);
  set_health("readiness", ready);
}

std::vector<QueueFigures> Daemon::queue_figures() {
  MutexLock lock(&queues_mu_);
  if (load_queue_ == nullptr) return {};
  // The label values of diffusiond_queue_rejections_total: the denoise queue
  // is "compute" there.
  return {{"load", load_queue_->running(), load_queue_->queued(), kLoadThreads, kQueuedPerPool},
          {"compute", compute_queue_->running(), compute_queue_->queued(), options_.max_concurrent_denoise,
           options_.max_queued_denoise},
          {"unload", admin_queue_->running(), admin_queue_->queued(), kAdminThreads, kQueuedPerPool}};
}

int Daemon::metrics_port() const { return metrics_server_ != nullptr ? metrics_server_->port() : 0; }

void Daemon::housekeeping_until_stopped() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    clock_->wait_until(&stop_changed_, &mu_, clock_->now() + absl::Seconds(1));
    if (authorizer_ != nullptr) reload_access_file();
    if (const int expired = engine_->expire_leases(); expired > 0) {
      log_.info("leases expired", absl::StrCat("count=", expired));
    }
    // Each engine call returns the heap's free pages when it ends, but its
    // request and response messages are freed after that, by gRPC; when no
    // call runs, what they left goes back too (a 224x224 Step's kept 29 MiB
    // for longer than jemalloc's 10 s decay). Not while calls run: their
    // freed activations are reused step after step.
    if (engine_->running_jobs() == 0) release_free_heap_to_os();
  }
}

void Daemon::reload_access_file() {
  const Authorizer::Reload r = authorizer_->reload_if_changed();
  if (r.outcome == Authorizer::ReloadOutcome::kReloaded) {
    metrics_->count_auth_reload(true);
    const std::shared_ptr<const AccessTable> table = authorizer_->table();
    log_.info("access file reloaded", absl::StrCat("path=", logfmt_value(authorizer_->path()), " tokens=",
                                                   table->token_count(), " certificates=", table->certificate_count()));
  } else if (r.outcome == Authorizer::ReloadOutcome::kFailed) {
    metrics_->count_auth_reload(false);
    // The message names the file and line, never a token (access_table.h).
    log_.error("access file not reloaded; the previous one stays in force",
               absl::StrCat("error=", logfmt_value(r.error.message())));
  }
}

void Daemon::drain() {
  if (drained_.exchange(true)) return;
  const absl::Time start = clock_->now();
  const absl::Time deadline = start + options_.drain_grace;
  if (ready_) {
    log_.info("draining", absl::StrCat("grace_seconds=", absl::ToDoubleSeconds(options_.drain_grace)));
    set_ready(false);
    clock_->sleep_for(std::min(options_.drain_grace / 10, kMaxAcceptGrace));
  }
  engine_->stop_accepting();
  if (!engine_->wait_idle(deadline)) {
    log_.warning("drain grace over; cancelling in-flight work");
    engine_->cancel_all();
    const absl::Time cancelled = clock_->now();
    if (!engine_->wait_idle(cancelled + seams_.cancel_wait)) exit_with_work_running(start);
    log_.info("in-flight work stopped", absl::StrCat("seconds_after_cancel=", absl::ToDoubleSeconds(clock_->now() - cancelled)));
  }
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  stop_changed_.signal_all();
  if (housekeeping_.joinable()) housekeeping_.join();
  // Watchers end with UNAVAILABLE after what is queued for them, before
  // gRPC waits for its calls.
  if (events_ != nullptr) events_->close(absl::UnavailableError("the daemon is shutting down"));
  if (server_ != nullptr) {
    // Calls still open (health watches, calls refused just now) end here.
    // gRPC takes a real-time deadline: the clock seam does not reach into it.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
  }
  if (health_server_ != nullptr) {
    health_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    health_server_->Wait();
  }
  {
    // Destroyed outside the lock: their destructors join workers, and a
    // scrape meanwhile reports no queues.
    std::unique_ptr<WorkQueue> load, compute, admin;
    {
      MutexLock lock(&queues_mu_);
      load = std::move(load_queue_);
      compute = std::move(compute_queue_);
      admin = std::move(admin_queue_);
    }
    load.reset();
    compute.reset();
    admin.reset();
  }
  const int64_t freed = engine_->unload_all(absl::Seconds(5));
  const BudgetSnapshot b = ram_budget_->snapshot();
  metrics_server_.reset();
  std::string vram;
  if (device_.vram_budget != nullptr) {
    const BudgetSnapshot v = device_.vram_budget->snapshot();
    vram = absl::StrCat(" vram_reserved_bytes=", v.reserved_bytes, " vram_committed_bytes=", v.committed_bytes);
  }
  log_.info("stopped", absl::StrCat("seconds=", absl::ToDoubleSeconds(clock_->now() - start), " freed_bytes=", freed,
                                    " reserved_bytes=", b.reserved_bytes, " committed_bytes=", b.committed_bytes, vram));
}

// Work that outlives its cancellation is stuck where no token reaches it,
// and the queues' destructors would join its threads: the exit would hang
// until Kubernetes' SIGKILL, or for good without one. The daemon keeps no
// state, so ending the process loses nothing a clean exit would keep.
void Daemon::exit_with_work_running(absl::Time drain_start) {
  std::string loading, in_use;
  for (const CacheEntryStats& e : engine_->stats().entries) {
    if (e.loading) absl::StrAppend(&loading, loading.empty() ? "" : ",", e.key);
    if (e.pins > e.leases) absl::StrAppend(&in_use, in_use.empty() ? "" : ",", e.key);
  }
  log_.error("work still running after cancellation; exiting without waiting for it",
             absl::StrCat("jobs=", engine_->running_jobs(), " loading=", logfmt_value(loading),
                          " in_use=", logfmt_value(in_use),
                          " seconds=", absl::ToDoubleSeconds(clock_->now() - drain_start),
                          " exit_status=", kDrainGaveUpExitStatus));
  std::fflush(nullptr);  // the log writes unbuffered; anything else on stdio
  ::_exit(kDrainGaveUpExitStatus);
}

Daemon::~Daemon() {
  if (engine_ != nullptr) drain();
}

}  // namespace diffusiond
