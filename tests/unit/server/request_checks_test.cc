// The torch-free request checks the services run before the engine: NaN or
// infinite latents in each floating dtype, latents that are not floating,
// negative Generate sizes, over-long pipelines, and option values echoed
// bounded.
#include "server/request_checks.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/request_options.h"
#include "proto/wire_format.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

v1::Tensor f32_tensor(std::initializer_list<float> values) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_FLOAT32);
  t.add_shape(static_cast<int64_t>(values.size()));
  std::string data(values.size() * sizeof(float), '\0');
  std::memcpy(data.data(), values.begin(), data.size());
  t.set_data(data);
  return t;
}

// Two 16-bit elements, the second given as its bits.
v1::Tensor half_tensor(v1::DType dtype, uint16_t second) {
  v1::Tensor t;
  t.set_dtype(dtype);
  t.add_shape(2);
  std::string data(4, '\0');
  std::memcpy(data.data() + 2, &second, 2);
  t.set_data(data);
  return t;
}

v1::DenoiseRequest with_latents(const v1::Tensor& latents) {
  v1::DenoiseRequest r;
  r.set_model_id("m");
  *r.mutable_initial_latents() = latents;
  return r;
}

TEST(RequestChecks, FiniteLatentsPass) {
  EXPECT_THAT(check_denoise_request(with_latents(f32_tensor({0.5f, -3.0f, 1e30f}))), IsOk());
  v1::DecodeRequest decode;
  *decode.mutable_latents() = half_tensor(v1::DTYPE_BFLOAT16, 0x7f7f);  // bfloat16's largest finite
  EXPECT_THAT(check_decode_request(decode), IsOk());
}

TEST(RequestChecks, NanOrInfiniteLatentsAreRefusedNamingTheElement) {
  const float nan = std::nanf("");
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THAT(check_denoise_request(with_latents(f32_tensor({0.0f, 1.0f, nan}))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("initial_latents"), HasSubstr("element 2"), HasSubstr("NaN or infinite"))));
  EXPECT_THAT(check_denoise_request(with_latents(f32_tensor({-inf}))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element 0")));
  for (auto [dtype, bits] : {std::pair{v1::DTYPE_FLOAT16, uint16_t{0x7c00}},   // +inf
                             std::pair{v1::DTYPE_FLOAT16, uint16_t{0xfe01}},   // NaN
                             std::pair{v1::DTYPE_BFLOAT16, uint16_t{0xff80}},  // -inf
                             std::pair{v1::DTYPE_BFLOAT16, uint16_t{0x7fc0}}}) {
    v1::DecodeRequest decode;
    *decode.mutable_latents() = half_tensor(dtype, bits);
    EXPECT_THAT(check_decode_request(decode),
                StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("latents"), HasSubstr("element 1"))))
        << wire_dtype_name(dtype) << " " << bits;
  }
  v1::Tensor f64;
  f64.set_dtype(v1::DTYPE_FLOAT64);
  const double value = std::numeric_limits<double>::infinity();
  f64.set_data(std::string(reinterpret_cast<const char*>(&value), sizeof(value)));
  EXPECT_THAT(check_denoise_request(with_latents(f64)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float64 element 0")));
}

TEST(RequestChecks, LatentsMustBeFloatingAndPresent) {
  v1::Tensor ints;
  ints.set_dtype(v1::DTYPE_INT32);
  ints.set_data(std::string(4, '\0'));
  EXPECT_THAT(check_denoise_request(with_latents(ints)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("floating-point tensor, got int32")));
  EXPECT_THAT(check_decode_request(v1::DecodeRequest()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("latents: dtype is unspecified")));
  EXPECT_THAT(check_denoise_request(v1::DenoiseRequest()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("give initial_latents or latent_shape")));
}

TEST(RequestChecks, ConditioningNamesAreCheckedAndQuotedBounded) {
  v1::DenoiseRequest r = with_latents(f32_tensor({0.0f}));
  v1::NamedTensor* t = r.mutable_negative()->add_tensors();
  t->set_name(std::string(100000, 'n'));
  *t->mutable_tensor() = f32_tensor({0.0f});
  *r.mutable_negative()->add_tensors() = *t;
  const absl::Status s = check_denoise_request(r);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                          AllOf(HasSubstr("negative conditioning: input"), HasSubstr("(100000 bytes)"),
                                HasSubstr("more than once"))));
  EXPECT_LT(s.message().size(), 400u);
}

TEST(RequestChecks, NegativeGenerateSizesAndStepsAreRefused) {
  v1::GenerateRequest r;
  r.set_pipeline("p");
  EXPECT_THAT(check_generate_request(r), IsOk());  // zeros: the defaults
  r.set_width(-16);
  EXPECT_THAT(check_generate_request(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("must not be negative"), HasSubstr("-16x0"))));
  r.set_width(512);
  r.set_height(std::numeric_limits<int32_t>::min());
  EXPECT_THAT(check_generate_request(r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-2147483648")));
  r.set_height(512);
  r.set_steps(-1);
  EXPECT_THAT(check_generate_request(r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-1 steps")));
}

TEST(RequestChecks, APipelineLongerThanAPathIsRefusedEchoedBounded) {
  v1::EncodePromptRequest encode;
  encode.set_text_encoder("te");
  encode.set_pipeline("wan");
  EXPECT_THAT(check_encode_prompt_request(encode), IsOk());
  encode.set_pipeline(std::string(kMaxPipelineBytes, 'p'));
  EXPECT_THAT(check_encode_prompt_request(encode), IsOk());
  encode.set_pipeline(std::string(kMaxPipelineBytes + 1, 'p'));
  const absl::Status s = check_encode_prompt_request(encode);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("(4097 bytes)"), HasSubstr("longer than 4096"))));
  EXPECT_LT(s.message().size(), 400u);
  v1::GenerateRequest generate;
  generate.set_pipeline(encode.pipeline());
  EXPECT_THAT(check_generate_request(generate), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("longer than")));
}

TEST(RequestOptions, NamesAreEchoedBounded) {
  const std::string huge(100000, 'x');
  const absl::Status dtype = compute_dtype_from_wire(huge).status();
  EXPECT_THAT(dtype, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(100000 bytes)")));
  EXPECT_LT(dtype.message().size(), 400u);
  const absl::Status device = device_from_wire(huge).status();
  EXPECT_THAT(device, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(100000 bytes)")));
  EXPECT_LT(device.message().size(), 400u);
}

TEST(RequestOptions, ALeaseTtlTooSmallToBeADurationIsRefused) {
  // Found by the wire fuzz target: 1e-130 s is positive but rounds to a
  // zero duration, a lease that expired as it was granted.
  EXPECT_THAT(lease_ttl_from_wire(1e-130).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 1e-130")));
  EXPECT_THAT(lease_ttl_from_wire(std::nan("")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ttl_seconds must be in (0, 604800]")));
  EXPECT_THAT(lease_ttl_from_wire(0.001), IsOk());
}

}  // namespace
}  // namespace diffusiond
