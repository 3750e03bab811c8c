// step, denoise: the DenoiseService commands, with tensors read from and
// written to .safetensors files.
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "diffusiond/v1/denoise_service.grpc.pb.h"
#include "clients/diffusionctl/commands.h"
#include "clients/diffusionctl/progress.h"
#include "clients/diffusionctl/tensor_file.h"
#include "proto/wire_format.h"

namespace diffusiond::ctl {
namespace {

using internal::from_grpc;
using internal::new_context;
using internal::unary_call;

// Says what was written to `path`: a line per tensor, or one JSON object.
void print_written(const CommandEnv& env, const std::string& path, const NamedTensors& tensors) {
  if (env.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const v1::NamedTensor& t : tensors) {
      list.push_back(
          {{"name", t.name()},
           {"dtype", wire_dtype_name(t.tensor().dtype())},
           {"shape", std::vector<int64_t>(t.tensor().shape().begin(), t.tensor().shape().end())}});
    }
    *env.out << nlohmann::json{{"path", path}, {"tensors", list}}.dump() << "\n";
    return;
  }
  *env.out << "wrote " << path << ":\n";
  for (const v1::NamedTensor& t : tensors) {
    *env.out << "  " << t.name() << " " << wire_dtype_name(t.tensor().dtype()) << " ["
             << absl::StrJoin(t.tensor().shape(), ", ") << "]\n";
  }
}

// Fills `c` with the tensors of the file at `path` (none when empty) and `scalars`.
absl::Status read_conditioning(const std::string& path, const std::map<std::string, double>& scalars,
                               v1::Conditioning* c) {
  if (!path.empty()) {
    absl::StatusOr<NamedTensors> tensors = read_tensor_file(path);
    if (!tensors.ok()) return tensors.status();
    c->mutable_tensors()->Swap(&*tensors);
  }
  for (const auto& [name, value] : scalars) (*c->mutable_scalars())[name] = value;
  return absl::OkStatus();
}

// The request's adapters, from --lora.
void add_adapters(const std::vector<LoraOption>& loras, google::protobuf::RepeatedPtrField<v1::Adapter>* out) {
  for (const LoraOption& lora : loras) {
    v1::Adapter* adapter = out->Add();
    adapter->set_path(lora.path);
    adapter->set_weight(lora.weight);
  }
}

}  // namespace

absl::Status run_command(const CommandEnv& env, const StepOptions& options) {
  v1::StepRequest request;
  request.set_model_id(options.model_id);
  absl::StatusOr<NamedTensors> inputs = read_tensor_file(options.inputs_path);
  if (!inputs.ok()) return inputs.status();
  request.mutable_inputs()->Swap(&*inputs);
  add_adapters(options.loras, request.mutable_adapters());
  v1::StepResponse response;
  const absl::Status status = unary_call(env, &v1::DenoiseService::Stub::Step, request, &response, options.model_id);
  if (!status.ok()) return status;
  if (absl::Status s = write_tensor_file(options.outputs_path, response.outputs()); !s.ok()) {
    return s;
  }
  print_written(env, options.outputs_path, response.outputs());
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const DenoiseOptions& options) {
  v1::DenoiseRequest request;
  request.set_model_id(options.model_id);
  if (absl::Status s = read_conditioning(options.conditioning_path, options.scalars, request.mutable_conditioning());
      !s.ok()) {
    return s;
  }
  if (!options.negative_path.empty()) {
    if (absl::Status s = read_conditioning(options.negative_path, options.scalars, request.mutable_negative());
        !s.ok()) {
      return s;
    }
  }
  if (!options.latents_path.empty()) {
    absl::StatusOr<v1::Tensor> latents = read_single_tensor(options.latents_path, "latents");
    if (!latents.ok()) return latents.status();
    request.mutable_initial_latents()->Swap(&*latents);
  }
  for (int64_t d : options.latent_shape) request.add_latent_shape(d);
  request.set_seed(options.seed);
  request.set_guidance_scale(options.guidance_scale);
  request.set_steps(options.steps);
  request.set_shift(options.shift);
  for (float s : options.sigmas) request.add_sigmas(s);
  request.set_expert_2(options.expert_2);
  request.set_boundary_ratio(options.boundary_ratio);
  request.set_guidance_scale_2(options.guidance_scale_2);
  add_adapters(options.loras, request.mutable_adapters());

  auto stub = v1::DenoiseService::NewStub(env.channel);
  std::unique_ptr<grpc::ClientContext> context = new_context(env, options.model_id);
  CallCanceller::Scope scope(env.canceller, context.get());
  std::unique_ptr<grpc::ClientReader<v1::DenoiseEvent>> reader =
      stub->Denoise(context.get(), request);
  v1::DenoiseEvent event;
  v1::DenoiseStep last_step;
  NamedTensors latents;
  while (reader->Read(&event)) {
    if (event.has_step()) {
      last_step = event.step();
      *env.err << format_denoise_step(last_step) << std::endl;
    }
    if (event.has_latents()) {
      latents.Clear();
      v1::NamedTensor* named = latents.Add();
      named->set_name("latents");
      named->mutable_tensor()->Swap(event.mutable_latents());
    }
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) {
    absl::Status s = from_grpc(env, status);
    if (s.code() != absl::StatusCode::kCancelled) return s;
    return absl::CancelledError(absl::StrCat(
        "denoise cancelled after step ", last_step.step(), "/",
        last_step.steps() != 0 ? last_step.steps() : options.steps, " (", s.message(), ")"));
  }
  if (latents.empty()) return absl::InternalError("the daemon ended Denoise without latents");
  if (absl::Status s = write_tensor_file(options.out_path, latents); !s.ok()) return s;
  print_written(env, options.out_path, latents);
  return absl::OkStatus();
}

}  // namespace diffusiond::ctl
