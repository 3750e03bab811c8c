// generate, encode, decode: the PipelineService commands. Images arrive as
// PNG bytes, which are checked to decode to the size the daemon states
// before they are written; conditioning tensors go to .safetensors files.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "clients/diffusionctl/commands.h"
#include "clients/diffusionctl/format.h"
#include "clients/diffusionctl/progress.h"
#include "clients/diffusionctl/tensor_file.h"
#include "core/image/png.h"
#include "core/util/file_text.h"
#include "diffusiond/v1/pipeline_service.grpc.pb.h"
#include "proto/wire_format.h"

namespace diffusiond::ctl {
namespace {

using internal::from_grpc;
using internal::new_context;
using internal::unary_call;

uint64_t random_seed() {
  std::random_device device;
  return (uint64_t{device()} << 32) | device();
}

// Writes `bytes` to `path`, replacing the file. UNAVAILABLE naming the path
// and the system's reason if that fails; a partial file is removed.
absl::Status write_file(const std::string& path, const std::string& bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  int error = written ? 0 : errno;
  if (std::fclose(file) != 0 && error == 0) error = errno;
  if (!written || error != 0) {
    std::remove(path.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(error != 0 ? error : EIO)));
  }
  return absl::OkStatus();
}

// Decodes the daemon's PNG: DATA_LOSS if it does not decode, or not to the
// width and height the message states.
absl::StatusOr<DecodedPng> check_image(const v1::Image& image, absl::string_view method) {
  absl::StatusOr<DecodedPng> png = decode_png(image.png());
  if (!png.ok()) {
    return absl::DataLossError(absl::StrCat("the daemon's ", method,
                                            " image is not a valid PNG: ", png.status().message()));
  }
  if (png->width != image.width() || png->height != image.height()) {
    return absl::DataLossError(absl::StrCat("the daemon's ", method, " image is ", png->width, "x",
                                            png->height, " but was announced as ", image.width(),
                                            "x", image.height()));
  }
  return png;
}

// Says what was written: the path, size (and seed), then the PNG's text
// chunks; or one JSON object.
void print_image(const CommandEnv& env, const std::string& path, const v1::Image& image,
                 const DecodedPng& png, bool with_seed) {
  if (env.json) {
    nlohmann::json json{{"path", path},
                        {"width", image.width()},
                        {"height", image.height()},
                        {"bytes", image.png().size()}};
    if (with_seed) json["seed"] = image.seed();
    nlohmann::json text = nlohmann::json::object();
    for (const auto& [keyword, value] : png.text) text[keyword] = value;
    json["text"] = text;
    *env.out << json.dump() << "\n";
    return;
  }
  *env.out << "wrote " << path << ": " << image.width() << "x" << image.height() << ", "
           << short_bytes(static_cast<int64_t>(image.png().size()));
  if (with_seed) *env.out << ", seed " << image.seed();
  *env.out << "\n";
  for (const auto& [keyword, value] : png.text) {
    *env.out << "  " << keyword << ": " << absl::StrReplaceAll(value, {{"\n", "\n    "}}) << "\n";
  }
}

absl::Status write_image(const CommandEnv& env, const std::string& path, const v1::Image& image,
                         absl::string_view method, bool with_seed) {
  absl::StatusOr<DecodedPng> png = check_image(image, method);
  if (!png.ok()) return png.status();
  if (absl::Status s = write_file(path, image.png()); !s.ok()) return s;
  print_image(env, path, image, *png, with_seed);
  return absl::OkStatus();
}

// "out.png" -> "out-<index>.png" (the index before the extension, if any).
std::string indexed_path(const std::string& path, int index) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return absl::StrCat(path, "-", index);
  return absl::StrCat(path.substr(0, dot), "-", index, path.substr(dot));
}

// A video's path: `out` with ".mp4" in place of its extension (if any),
// "-<index>" before it when the request makes several videos.
std::string video_path(const std::string& out, int videos, int index) {
  const size_t dot = out.rfind('.');
  const size_t slash = out.rfind('/');
  const std::string stem =
      dot == std::string::npos || (slash != std::string::npos && dot < slash) ? out : out.substr(0, dot);
  return videos == 1 ? absl::StrCat(stem, ".mp4") : absl::StrCat(stem, "-", index, ".mp4");
}

// A PNG frame's path: `out`'s stem, "-<index>" when the request makes
// several videos, then "-<frame>.png" (four digits, so they sort).
std::string frame_path(const std::string& out, int videos, int index, int frame) {
  const std::string mp4 = video_path(out, videos, index);
  return absl::StrCat(mp4.substr(0, mp4.size() - 4), "-", absl::Dec(frame, absl::kZeroPad4), ".png");
}

// Writes one PNG frame of a video, checked as an image is.
absl::Status write_frame(const std::string& path, const v1::VideoFrame& frame) {
  absl::StatusOr<DecodedPng> png = decode_png(frame.png());
  if (!png.ok()) {
    return absl::DataLossError(absl::StrCat("the daemon's frame ", frame.frame(), " is not a valid PNG: ",
                                            png.status().message()));
  }
  return write_file(path, frame.png());
}

// Writes a video's MP4 (none with PNG frames) and says what was written.
absl::Status write_video(const CommandEnv& env, const std::string& out, int videos, const v1::Video& video,
                         int frames_written) {
  const bool mp4 = !video.mp4().empty();
  const std::string path = mp4 ? video_path(out, videos, video.index())
                               : frame_path(out, videos, video.index(), 0);
  if (mp4) {
    if (absl::Status s = write_file(path, video.mp4()); !s.ok()) return s;
  } else if (frames_written != video.frames()) {
    return absl::DataLossError(absl::StrCat("the daemon sent ", frames_written, " frames of video ", video.index(),
                                            ", announced ", video.frames()));
  }
  if (env.json) {
    nlohmann::json json{{"path", path},       {"width", video.width()}, {"height", video.height()},
                        {"frames", video.frames()}, {"fps", video.fps()}, {"seed", video.seed()},
                        {"index", video.index()}, {"bytes", video.mp4().size()}};
    json["parameters"] = video.parameters();
    *env.out << json.dump() << "\n";
    return absl::OkStatus();
  }
  *env.out << "wrote " << (mp4 ? path : absl::StrCat(frame_path(out, videos, video.index(), 0), " .. ",
                                                      frame_path(out, videos, video.index(), video.frames() - 1)))
           << ": " << video.width() << "x" << video.height() << ", " << video.frames() << " frames at "
           << video.fps() << " fps";
  if (mp4) *env.out << ", " << short_bytes(static_cast<int64_t>(video.mp4().size()));
  *env.out << ", seed " << video.seed() << "\n  parameters: " << video.parameters() << "\n";
  return absl::OkStatus();
}

// A PNG the daemon would take (its side limit, 4096, at 16 bits with alpha).
constexpr int64_t kMaxImageFileBytes = int64_t{256} << 20;

}  // namespace

absl::Status run_command(const CommandEnv& env, const GenerateOptions& options) {
  v1::GenerateRequest request;
  request.set_pipeline(options.pipeline);
  for (const auto& [name, id] : options.components) (*request.mutable_components())[name] = id;
  request.set_prompt(options.prompt);
  request.set_negative_prompt(options.negative_prompt);
  request.set_width(options.width);
  request.set_height(options.height);
  request.set_steps(options.steps);
  if (options.guidance_scale.has_value()) request.set_guidance_scale(*options.guidance_scale);
  request.set_true_cfg_scale(options.true_cfg_scale);
  // The image inputs go as the files' bytes: the daemon decodes and checks them.
  for (const auto& [path, field] : {std::pair<const std::string*, std::string*>{&options.image_path, request.mutable_image()},
                                    {&options.mask_path, request.mutable_mask_image()}}) {
    if (path->empty()) continue;
    absl::StatusOr<std::string> bytes = read_text_file(*path, kMaxImageFileBytes);
    if (!bytes.ok()) return bytes.status();
    *field = *std::move(bytes);
  }
  if (options.padding_mask_crop.has_value()) request.set_padding_mask_crop(*options.padding_mask_crop);
  for (const LoraOption& lora : options.loras) {
    v1::Adapter* adapter = request.add_adapters();
    adapter->set_path(lora.path);
    adapter->set_weight(lora.weight);
  }
  request.set_strength(options.strength);
  request.set_num_images_per_prompt(options.num_images);
  for (uint64_t seed : options.seeds) request.add_seeds(seed);
  for (float sigma : options.sigmas) request.add_sigmas(sigma);
  request.set_max_sequence_length(options.max_sequence_length);
  request.set_num_frames(options.num_frames);
  if (options.guidance_scale_2.has_value()) request.set_guidance_scale_2(*options.guidance_scale_2);
  request.set_video_format(options.video_format);
  for (const auto& [name, load] : options.component_options) {
    v1::ComponentOptions& wire = (*request.mutable_component_options())[name];
    wire.set_fp8(load.fp8);
    wire.set_compute_dtype(load.compute_dtype);
  }
  if (options.seeds.empty()) request.set_seed(options.seed.has_value() ? *options.seed : random_seed());
  request.set_shift(options.shift);

  auto stub = v1::PipelineService::NewStub(env.channel);
  // A Generate loads every component where it runs: the pipeline (else the transformer) keeps them
  // together on one replica.
  const auto transformer = options.components.find("transformer");
  std::unique_ptr<grpc::ClientContext> context =
      new_context(env, !options.pipeline.empty()                 ? options.pipeline
                       : transformer != options.components.end() ? transformer->second
                                                                 : std::string());
  CallCanceller::Scope scope(env.canceller, context.get());
  std::unique_ptr<grpc::ClientReader<v1::GenerateEvent>> reader =
      stub->Generate(context.get(), request);
  v1::GenerateEvent event;
  std::string last_progress;
  const int images = std::max(options.num_images, 1);
  int written = 0;
  int frames_written = 0;  // of the video in progress
  absl::Status write_status;
  while (reader->Read(&event)) {
    if (event.has_progress()) {
      last_progress = format_generate_progress(event.progress());
      *env.err << last_progress << std::endl;
    } else if (event.has_image() && write_status.ok()) {
      // Each image is written as it arrives.
      const std::string path = images == 1 ? options.out_path : indexed_path(options.out_path, written);
      write_status = write_image(env, path, event.image(), "Generate", /*with_seed=*/true);
      ++written;
    } else if (event.has_frame() && write_status.ok()) {
      const v1::VideoFrame& frame = event.frame();
      if (frame.frame() != frames_written) {
        write_status = absl::DataLossError(absl::StrCat("the daemon sent frame ", frame.frame(), " after ",
                                                        frames_written, " frames"));
        continue;
      }
      write_status = write_frame(frame_path(options.out_path, images, frame.index(), frame.frame()), frame);
      ++frames_written;
    } else if (event.has_video() && write_status.ok()) {
      write_status = write_video(env, options.out_path, images, event.video(), frames_written);
      frames_written = 0;
      ++written;
    }
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) {
    absl::Status s = from_grpc(env, status);
    if (s.code() != absl::StatusCode::kCancelled) return s;
    return absl::CancelledError(absl::StrCat("generate cancelled ",
                                             last_progress.empty()
                                                 ? "before any progress"
                                                 : absl::StrCat("after \"", last_progress, "\""),
                                             " (", s.message(), ")"));
  }
  if (!write_status.ok()) return write_status;
  if (written != images) {
    return absl::InternalError(absl::StrCat("the daemon ended Generate after ", written, " of ", images, " images"));
  }
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const EncodeOptions& options) {
  v1::EncodePromptRequest request;
  request.set_text_encoder(options.text_encoder);
  request.set_prompt(options.prompt);
  request.set_pipeline(options.pipeline);
  v1::EncodePromptResponse response;
  if (absl::Status s =
          unary_call(env, &v1::PipelineService::Stub::EncodePrompt, request, &response, options.text_encoder);
      !s.ok()) {
    return s;
  }
  const v1::Conditioning& conditioning = response.conditioning();
  if (conditioning.tensors().empty()) {
    return absl::InternalError("the daemon's EncodePrompt returned no conditioning tensors");
  }
  if (absl::Status s = write_tensor_file(options.out_path, conditioning.tensors()); !s.ok()) {
    return s;
  }
  // Scalars have no place in a .safetensors file: they are printed, for
  // denoise --scalars.
  const std::map<std::string, double> scalars(conditioning.scalars().begin(),
                                              conditioning.scalars().end());
  if (env.json) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const v1::NamedTensor& t : conditioning.tensors()) {
      tensors.push_back(
          {{"name", t.name()},
           {"dtype", wire_dtype_name(t.tensor().dtype())},
           {"shape", std::vector<int64_t>(t.tensor().shape().begin(), t.tensor().shape().end())}});
    }
    *env.out << nlohmann::json{{"path", options.out_path},
                               {"tokens", response.tokens()},
                               {"tensors", tensors},
                               {"scalars", scalars}}
                    .dump()
             << "\n";
    return absl::OkStatus();
  }
  *env.out << "wrote " << options.out_path << " (" << response.tokens() << " tokens):\n";
  for (const v1::NamedTensor& t : conditioning.tensors()) {
    *env.out << "  " << t.name() << " " << wire_dtype_name(t.tensor().dtype()) << " ["
             << absl::StrJoin(t.tensor().shape(), ", ") << "]\n";
  }
  if (!scalars.empty()) {
    *env.out << "scalars (not in the file): "
             << absl::StrJoin(scalars, ",", absl::PairFormatter("=")) << "\n";
  }
  return absl::OkStatus();
}

absl::Status run_command(const CommandEnv& env, const DecodeOptions& options) {
  v1::DecodeRequest request;
  request.set_vae(options.vae);
  absl::StatusOr<v1::Tensor> latents = read_single_tensor(options.latents_path, "latents");
  if (!latents.ok()) return latents.status();
  request.mutable_latents()->Swap(&*latents);
  v1::Image image;
  if (absl::Status s = unary_call(env, &v1::PipelineService::Stub::Decode, request, &image, options.vae); !s.ok()) {
    return s;
  }
  return write_image(env, options.out_path, image, "Decode", /*with_seed=*/false);
}

}  // namespace diffusiond::ctl
