// generate, encode and decode against an in-process fake PipelineService on
// 127.0.0.1:0: what each sends, what it shows and prints, what it writes,
// and that a failed or cancelled call writes nothing.
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/diffusionctl/channel.h"
#include "clients/diffusionctl/commands.h"
#include "clients/diffusionctl/tensor_file.h"
#include "core/image/png.h"
#include "core/util/mutex.h"
#include "diffusiond/v1/pipeline_service.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace diffusiond::ctl {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

v1::Tensor f32(const std::vector<int64_t>& shape, float fill) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_FLOAT32);
  int64_t n = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    n *= d;
  }
  const std::vector<float> values(n, fill);
  t.set_data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return t;
}

// A grey width x height image with `text`, as the daemon would send it.
v1::Image image(int width, int height, uint64_t seed, const PngText& text) {
  const std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3, 128);
  absl::StatusOr<std::string> png = encode_png(rgb.data(), width, height, text);
  EXPECT_THAT(png, IsOk());
  v1::Image out;
  out.set_png(png.ok() ? *png : "");
  out.set_width(width);
  out.set_height(height);
  out.set_seed(seed);
  return out;
}

v1::GenerateEvent progress(v1::GenerateProgress::Stage stage, const std::string& model, int step,
                           int steps, double seconds, const std::string& detail) {
  v1::GenerateEvent event;
  v1::GenerateProgress* p = event.mutable_progress();
  p->set_stage(stage);
  p->set_model_id(model);
  p->set_step(step);
  p->set_steps(steps);
  p->set_seconds(seconds);
  p->set_detail(detail);
  return event;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <typename T>
class Last {
 public:
  void set(const T& value) {
    MutexLock lock(&mu_);
    value_ = value;
  }
  T get() const {
    MutexLock lock(&mu_);
    return value_;
  }

 private:
  mutable Mutex mu_;
  T value_ ABSL_GUARDED_BY(mu_);
};

// A stream buffer that tells a future when the first line has been written,
// so a test can act once a command has shown its first progress.
class FirstLineBuffer : public std::streambuf {
 public:
  std::future<void> first_line() { return first_line_.get_future(); }

 protected:
  int overflow(int c) override {
    if (c == '\n') std::call_once(once_, [this] { first_line_.set_value(); });
    return c == EOF ? 0 : c;
  }

 private:
  std::promise<void> first_line_;
  std::once_flag once_;
};

class FakePipelineService final : public v1::PipelineService::Service {
 public:
  FakePipelineService() : released_(release_.get_future().share()) {}

  // One token per word: "cap_feats" [tokens, 4]; text encoder "flux" adds a
  // scalar; "missing" is not found.
  grpc::Status EncodePrompt(grpc::ServerContext*, const v1::EncodePromptRequest* request,
                            v1::EncodePromptResponse* response) override {
    encode.set(*request);
    if (request->text_encoder() == "missing") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "models/missing: no such file or folder");
    }
    const int tokens =
        static_cast<int>(std::vector<std::string>(absl::StrSplit(request->prompt(), ' ')).size());
    v1::NamedTensor* t = response->mutable_conditioning()->add_tensors();
    t->set_name("cap_feats");
    *t->mutable_tensor() = f32({tokens, 4}, 0.5f);
    if (request->text_encoder() == "flux") {
      (*response->mutable_conditioning()->mutable_scalars())["guidance"] = 3.5;
    }
    response->set_tokens(tokens);
    return grpc::Status::OK;
  }

  // An 8x larger image than the latents [C, H, W]; VAE "liar" states
  // another size than its PNG has.
  grpc::Status Decode(grpc::ServerContext*, const v1::DecodeRequest* request,
                      v1::Image* response) override {
    decode.set(*request);
    const auto& shape = request->latents().shape();
    *response = image(static_cast<int>(shape[2]) * 8, static_cast<int>(shape[1]) * 8, 0,
                      {{"vae", request->vae()}});
    if (request->vae() == "liar") response->set_width(response->width() + 1);
    return grpc::Status::OK;
  }

  // Pipeline "hang" sends one event and waits for release(); "full" fails; "no-image" ends without
  // one; "garbage" sends bytes that are no PNG. Any other sends every stage and the image.
  grpc::Status Generate(grpc::ServerContext*, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateEvent>* writer) override {
    generate.set(*request);
    const std::string& pipeline = request->pipeline();
    const auto& components = request->components();
    const std::string transformer =
        components.count("transformer") == 0 ? pipeline + "/transformer" : components.at("transformer");
    const std::string vae = components.count("vae") == 0 ? "" : components.at("vae");
    if (pipeline == "full") {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "needed 12 GiB, available 3 GiB");
    }
    writer->Write(progress(v1::GenerateProgress::STAGE_LOAD, pipeline + "/text_encoder", 0, 0, 1.25,
                           "loaded 7.49 GiB"));
    if (pipeline == "hang") {
      released_.wait();
      return grpc::Status::OK;
    }
    writer->Write(
        progress(v1::GenerateProgress::STAGE_EVICT, "old", 0, 0, 0.0, "evicted to make room"));
    writer->Write(
        progress(v1::GenerateProgress::STAGE_ENCODE, pipeline + "/text_encoder", 0, 0, 0.5, ""));
    for (int i = 1; i <= request->steps(); ++i) {
      writer->Write(progress(v1::GenerateProgress::STAGE_DENOISE, transformer, i, request->steps(),
                             0.25, ""));
    }
    writer->Write(progress(v1::GenerateProgress::STAGE_DECODE, vae, 0, 0, 0.75, ""));
    if (pipeline == "no-image") return grpc::Status::OK;
    v1::GenerateEvent done;
    *done.mutable_image() =
        image(request->width(), request->height(), request->seed(),
              {{"prompt", request->prompt()}, {"seed", std::to_string(request->seed())}});
    if (pipeline == "garbage") done.mutable_image()->set_png("not a png");
    writer->Write(done);
    return grpc::Status::OK;
  }

  // Lets a waiting "hang" call return. Idempotent.
  void release() {
    std::call_once(released_once_, [this] { release_.set_value(); });
  }

  Last<v1::EncodePromptRequest> encode;
  Last<v1::DecodeRequest> decode;
  Last<v1::GenerateRequest> generate;

 private:
  std::promise<void> release_;
  std::shared_future<void> released_;
  std::once_flag released_once_;
};

class PipelineCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&pipeline_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    GlobalOptions global;
    global.address = "127.0.0.1:" + std::to_string(port);
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = open_channel(global);
    ASSERT_THAT(channel, IsOk());
    env_.channel = *channel;
    env_.address = global.address;
    env_.out = &out_;
    env_.err = &err_;
    env_.canceller = &canceller_;
  }

  void TearDown() override {
    pipeline_.release();
    server_->Shutdown();
  }

  GenerateOptions generate(const std::string& pipeline) {
    GenerateOptions o;
    o.pipeline = pipeline;
    o.prompt = "a cat on a mat";
    o.width = 32;
    o.height = 16;
    o.steps = 2;
    o.seed = 7;
    o.out_path = dir_.path("cat.png");
    return o;
  }

  FakePipelineService pipeline_;
  std::unique_ptr<grpc::Server> server_;
  std::ostringstream out_;
  std::ostringstream err_;
  CallCanceller canceller_;
  CommandEnv env_;
  TempDir dir_;
};

TEST_F(PipelineCommandsTest, GenerateShowsEachStageWritesThePngAndPrintsIt) {
  GenerateOptions o = generate("z-image");
  o.negative_prompt = "blurry";
  o.guidance_scale = 4.0;
  o.shift = 3.0;
  o.components["vae"] = "my-vae";
  ASSERT_THAT(run_command(env_, o), IsOk());

  const v1::GenerateRequest sent = pipeline_.generate.get();
  EXPECT_EQ(sent.pipeline(), "z-image");
  EXPECT_EQ(sent.components().size(), 1u);
  EXPECT_EQ(sent.components().at("vae"), "my-vae");
  EXPECT_EQ(sent.prompt(), "a cat on a mat");
  EXPECT_EQ(sent.negative_prompt(), "blurry");
  EXPECT_EQ(sent.width(), 32);
  EXPECT_EQ(sent.height(), 16);
  EXPECT_EQ(sent.steps(), 2);
  EXPECT_EQ(sent.guidance_scale(), 4.0);
  EXPECT_EQ(sent.seed(), 7u);
  EXPECT_EQ(sent.shift(), 3.0);
  EXPECT_EQ(err_.str(),
            "load    z-image/text_encoder 1.25 s (loaded 7.49 GiB)\n"
            "evict   old 0.00 s (evicted to make room)\n"
            "encode  z-image/text_encoder 0.50 s\n"
            "denoise z-image/transformer step 1/2 0.25 s\n"
            "denoise z-image/transformer step 2/2 0.25 s\n"
            "decode  my-vae 0.75 s\n");

  const std::string written = read_file(o.out_path);
  absl::StatusOr<DecodedPng> png = decode_png(written);
  ASSERT_THAT(png, IsOk());
  EXPECT_EQ(png->width, 32);
  EXPECT_EQ(png->height, 16);
  EXPECT_EQ(out_.str(), absl::StrCat("wrote ", o.out_path, ": 32x16, ", written.size(),
                                     " B, seed 7\n  prompt: a cat on a mat\n  seed: 7\n"));
}

TEST_F(PipelineCommandsTest, GenerateJsonAndARandomSeedWhenNoneIsGiven) {
  GenerateOptions o = generate("-");
  o.pipeline = "";
  o.components = {{"text_encoder", "te"}, {"transformer", "dit"}, {"vae", "vae"}};
  o.seed.reset();
  env_.json = true;
  ASSERT_THAT(run_command(env_, o), IsOk());
  const v1::GenerateRequest sent = pipeline_.generate.get();
  EXPECT_EQ(sent.pipeline(), "");
  EXPECT_EQ(sent.components().at("transformer"), "dit");
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["path"], o.out_path);
  EXPECT_EQ(json["width"], 32);
  EXPECT_EQ(json["height"], 16);
  EXPECT_EQ(json["bytes"], read_file(o.out_path).size());
  EXPECT_EQ(json["seed"].get<uint64_t>(), sent.seed());
  EXPECT_EQ(json["text"]["seed"], std::to_string(sent.seed()));
  EXPECT_THAT(err_.str(), HasSubstr("denoise dit step 2/2"));
}

TEST_F(PipelineCommandsTest, GenerateFailuresKeepTheCodeAndWriteNothing) {
  EXPECT_THAT(run_command(env_, generate("full")),
              StatusIs(absl::StatusCode::kResourceExhausted, "needed 12 GiB, available 3 GiB"));
  EXPECT_THAT(run_command(env_, generate("no-image")),
              StatusIs(absl::StatusCode::kInternal, "the daemon ended Generate after 0 of 1 images"));
  EXPECT_THAT(run_command(env_, generate("garbage")),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("the daemon's Generate image is not a valid PNG: not a PNG")));
  EXPECT_FALSE(std::filesystem::exists(generate("").out_path));
  EXPECT_EQ(out_.str(), "");

  GenerateOptions unwritable = generate("z-image");
  unwritable.out_path = dir_.path("no/such/folder/cat.png");
  EXPECT_THAT(
      run_command(env_, unwritable),
      StatusIs(absl::StatusCode::kUnavailable,
               absl::StrCat("cannot write ", unwritable.out_path, ": No such file or directory")));
}

TEST_F(PipelineCommandsTest, CancelStopsARunningGenerate) {
  FirstLineBuffer progress;
  std::future<void> first_line = progress.first_line();
  std::ostream err(&progress);
  env_.err = &err;
  absl::Status result;
  const GenerateOptions o = generate("hang");
  std::thread call([&] { result = run_command(env_, o); });
  first_line.wait();
  canceller_.cancel();
  call.join();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled,
                               AllOf(HasSubstr("generate cancelled after \"load    hang/"),
                                     HasSubstr("Ctrl-C"))));
  EXPECT_FALSE(std::filesystem::exists(o.out_path));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(PipelineCommandsTest, EncodeWritesTheConditioningAndPrintsTheTokens) {
  const std::string out = dir_.path("cap.safetensors");
  ASSERT_THAT(run_command(env_, EncodeOptions{"qwen", "a cat on a mat", out, ""}), IsOk());
  EXPECT_EQ(pipeline_.encode.get().text_encoder(), "qwen");
  EXPECT_EQ(pipeline_.encode.get().prompt(), "a cat on a mat");
  EXPECT_EQ(pipeline_.encode.get().pipeline(), "");
  absl::StatusOr<NamedTensors> written = read_tensor_file(out);
  ASSERT_THAT(written, IsOk());
  ASSERT_EQ(written->size(), 1);
  EXPECT_EQ(written->Get(0).name(), "cap_feats");
  EXPECT_EQ(written->Get(0).tensor().SerializeAsString(), f32({5, 4}, 0.5f).SerializeAsString());
  EXPECT_EQ(out_.str(), "wrote " + out + " (5 tokens):\n  cap_feats float32 [5, 4]\n");

  out_.str("");
  env_.json = true;
  ASSERT_THAT(run_command(env_, EncodeOptions{"flux", "two words", out, "flux"}), IsOk());
  EXPECT_EQ(pipeline_.encode.get().pipeline(), "flux");
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["path"], out);
  EXPECT_EQ(json["tokens"], 2);
  EXPECT_EQ(json["tensors"][0]["name"], "cap_feats");
  EXPECT_EQ(json["tensors"][0]["shape"], nlohmann::json::array({2, 4}));
  EXPECT_EQ(json["scalars"]["guidance"], 3.5);

  out_.str("");
  env_.json = false;
  ASSERT_THAT(run_command(env_, EncodeOptions{"flux", "one", out, ""}), IsOk());
  EXPECT_THAT(out_.str(), HasSubstr("scalars (not in the file): guidance=3.5\n"));
  EXPECT_THAT(run_command(env_, EncodeOptions{"missing", "x", out, ""}),
              StatusIs(absl::StatusCode::kNotFound, "models/missing: no such file or folder"));
}

TEST_F(PipelineCommandsTest, DecodeSendsTheLatentsAndWritesThePng) {
  NamedTensors latents;
  v1::NamedTensor* t = latents.Add();
  t->set_name("latents");
  *t->mutable_tensor() = f32({16, 2, 3}, 0.25f);
  v1::NamedTensor* other = latents.Add();
  other->set_name("other");
  *other->mutable_tensor() = f32({1}, 0.0f);
  const std::string in = dir_.path("latents.safetensors");
  ASSERT_THAT(write_tensor_file(in, latents), IsOk());

  const std::string out = dir_.path("image.png");
  ASSERT_THAT(run_command(env_, DecodeOptions{"vae", in, out}), IsOk());
  const v1::DecodeRequest sent = pipeline_.decode.get();
  EXPECT_EQ(sent.vae(), "vae");
  EXPECT_EQ(sent.latents().SerializeAsString(), t->tensor().SerializeAsString());
  absl::StatusOr<DecodedPng> png = decode_png(read_file(out));
  ASSERT_THAT(png, IsOk());
  EXPECT_EQ(png->width, 24);
  EXPECT_EQ(png->height, 16);
  EXPECT_THAT(png->text, ElementsAre(Pair("vae", "vae")));
  EXPECT_EQ(out_.str(),
            absl::StrCat("wrote ", out, ": 24x16, ", read_file(out).size(), " B\n  vae: vae\n"));

  EXPECT_THAT(run_command(env_, DecodeOptions{"liar", in, dir_.path("liar.png")}),
              StatusIs(absl::StatusCode::kDataLoss,
                       "the daemon's Decode image is 24x16 but was announced as 25x16"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path("liar.png")));
}

TEST_F(PipelineCommandsTest, DecodeFileErrorsComeBeforeAnyCall) {
  EXPECT_THAT(run_command(env_, DecodeOptions{"vae", dir_.path("absent.safetensors"),
                                              dir_.path("out.png")}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.safetensors")));
  EXPECT_EQ(pipeline_.decode.get().vae(), "");
}

}  // namespace
}  // namespace diffusiond::ctl
