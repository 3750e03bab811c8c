// libFuzzer target for what the daemon does with a request's bytes before
// libtorch or the engine sees them: protobuf decoding of the requests, and
// the checks the services run on gRPC's thread (server/request_checks.h,
// proto/wire_format.h, server/request_options.h), the engine's path
// confinement, and a Denoise's conditioning names against a model's
// declared inputs (check_conditioning: however many names a request sends,
// its refusal stays short). The same bytes are read as each request type
// in turn.
// Bad input must give a Status whose message is bounded, never a crash, a
// hang, a sanitizer report or an accepted value that breaks a check's
// promise.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "core/models/conditioning.h"
#include "core/util/confined_path.h"
#include "core/util/remove_tree.h"
#include "diffusiond/v1/cache_service.pb.h"
#include "diffusiond/v1/denoise_service.pb.h"
#include "diffusiond/v1/model_service.pb.h"
#include "diffusiond/v1/pipeline_service.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "proto/wire_format.h"
#include "server/request_checks.h"
#include "server/request_options.h"

namespace diffusiond {
namespace {

// A status message goes to the client in gRPC's trailing metadata (8 KiB
// by default); client text in it is quoted at most 200 bytes at a time.
constexpr size_t kMaxMessageBytes = 1024;

void check_bounded(const absl::Status& s) {
  if (s.message().size() > kMaxMessageBytes) __builtin_trap();
}

// A models directory with a file, a folder, and a symlink that leads out
// of it, so confinement sees each kind of path.
class ModelsDir {
 public:
  ModelsDir() {
    namespace fs = std::filesystem;
    top_ = (fs::temp_directory_path() / ("diffusiond_wire_fuzz_" + std::to_string(::getpid()))).string();
    fs::create_directories(top_ + "/models/folder");
    fs::create_directories(top_ + "/outside");
    std::ofstream(top_ + "/models/a.safetensors") << "x";
    std::ofstream(top_ + "/outside/secret") << "x";
    std::error_code ec;
    fs::create_directory_symlink("../outside", top_ + "/models/escape", ec);
    root_ = fs::canonical(top_ + "/models").string();
  }
  ~ModelsDir() { remove_tree(top_); }
  const std::string& root() const { return root_; }

 private:
  std::string top_;
  std::string root_;
};

const ModelsDir& models_dir() {
  static const ModelsDir dir;
  return dir;
}

void check_confined(const std::string& requested) {
  if (requested.empty()) return;  // the engine's default: the model id
  absl::StatusOr<std::string> resolved = resolve_confined_path(models_dir().root(), requested);
  check_bounded(resolved.status());
  if (!resolved.ok()) return;
  const std::string& root = models_dir().root();
  if (*resolved != root && !absl::StartsWith(*resolved, root + "/")) __builtin_trap();
  if (requested.find('\0') != std::string::npos) __builtin_trap();
}

void check_tensor(const v1::Tensor& wire) {
  absl::StatusOr<WireTensorLayout> layout = check_wire_tensor(wire, "tensor");
  check_bounded(layout.status());
  if (!layout.ok()) return;
  // What from_wire relies on before its memcpy.
  if (layout->nbytes != static_cast<int64_t>(wire.data().size())) __builtin_trap();
  if (layout->numel * wire_dtype_size(layout->dtype) != layout->nbytes) __builtin_trap();
  check_bounded(check_wire_finite(wire, "tensor"));
}

// The names of `wire` against a denoiser that reads one caption tensor and
// one optional scalar, as the engine checks them once the model is known.
// The tensors are placeholders: the names and their count are what the
// message lists.
void check_conditioning_names(const v1::Conditioning& wire) {
  static const std::vector<ConditioningInput> inputs = [] {
    ConditioningInput caption{"cap_feats", ConditioningInput::Kind::kTensor, {-1, 8}, true, 0, "caption features"};
    ConditioningInput guidance{"guidance", ConditioningInput::Kind::kScalar, {}, false, 3.5, "distilled guidance"};
    return std::vector<ConditioningInput>{caption, guidance};
  }();
  Conditioning given;
  for (const v1::NamedTensor& t : wire.tensors()) given.tensors[t.name()] = torch::zeros({1});
  for (const auto& [name, value] : wire.scalars()) given.scalars[name] = value;
  check_bounded(check_conditioning(given, inputs, "conditioning"));
}

template <typename Message>
bool parse(Message& m, const uint8_t* data, size_t size) {
  return m.ParseFromArray(data, static_cast<int>(size));
}

void fuzz_one(const uint8_t* data, size_t size) {
  // Most mutations break a string field's UTF-8, which protobuf logs.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  if (v1::Tensor m; parse(m, data, size)) check_tensor(m);
  if (v1::StepRequest m; parse(m, data, size)) {
    const absl::Status s = check_named_wire_tensors(m.inputs());
    check_bounded(s);
    if (s.ok()) {
      for (const v1::NamedTensor& t : m.inputs()) check_tensor(t.tensor());
    }
  }
  if (v1::DenoiseRequest m; parse(m, data, size)) {
    const absl::Status s = check_denoise_request(m);
    check_bounded(s);
    check_conditioning_names(m.conditioning());
    if (s.ok()) {
      if (m.steps() < 0 || m.steps() > kMaxDenoiseSteps || m.sigmas_size() > kMaxDenoiseSteps) __builtin_trap();
      if (m.has_initial_latents() && !check_wire_finite(m.initial_latents(), "x").ok()) __builtin_trap();
    }
  }
  if (v1::DecodeRequest m; parse(m, data, size)) {
    const absl::Status s = check_decode_request(m);
    check_bounded(s);
    if (s.ok() && !wire_dtype_is_floating(m.latents().dtype())) __builtin_trap();
  }
  if (v1::GenerateRequest m; parse(m, data, size)) check_bounded(check_generate_request(m));
  if (v1::EncodePromptRequest m; parse(m, data, size)) check_bounded(check_encode_prompt_request(m));
  if (v1::LoadModelRequest m; parse(m, data, size)) {
    check_bounded(fp8_from_wire(m.fp8()).status());
    check_bounded(compute_dtype_from_wire(m.compute_dtype()).status());
    check_confined(m.path());
    check_confined(m.config_path());
  }
  if (v1::AcquireLeaseRequest m; parse(m, data, size)) {
    absl::StatusOr<absl::Duration> ttl = lease_ttl_from_wire(m.ttl_seconds());
    check_bounded(ttl.status());
    if (ttl.ok() && (*ttl <= absl::ZeroDuration() || *ttl > absl::Hours(7 * 24))) __builtin_trap();
  }
  if (v1::MakeRoomRequest m; parse(m, data, size)) check_bounded(device_from_wire(m.device()).status());
}

}  // namespace
}  // namespace diffusiond

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  diffusiond::fuzz_one(data, size);
  return 0;
}
