// Parity of LoRA adapters with upstream diffusers + PEFT, on the lora-tiny
// fixture (DIFFUSIOND_LORA_FIXTURE, default the shared lora-tiny): for every
// model, every file of every LoRA (diffusers/PEFT, kohya, ComfyUI) and every
// case (one adapter at a weight, two stacked), the forward with the adapters
// attached beside the base weights matches upstream's forward over weights
// merged in float64 (`<model>.<case>.out`), the merged weights match
// `<model>.<case>.merged.<module>.weight`, the converted modules are
// upstream's, and every key of every file is used. With the base stored as
// FP8, the sidecar forward equals the forward of the decoded FP8 weights
// with the adapters merged in. Models, files, cases and weights are read
// from the fixture's variant.json, so another variant passes unchanged.
//
// Tolerance: 10x the fixture's own float32 noise floor (float32 vs its
// float64 rerun, stats.json `noise_floor`), as its README advises (~1e-5
// for 1e-6). A module left out or scaled wrongly moves outputs by the LoRA's
// effect, 1e-2 here. Merged weights: 1 ulp of float32 per element (the
// fixture's are the float32 rounding of a float64 merge, as ours are;
// max_float32_ulps says where cancellation needs more).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors_writer.h"
#include "core/lora/adapter_set.h"
#include "core/lora/lora_adapter.h"
#include "core/lora/lora_file.h"
#include "core/lora/lora_plan.h"
#include "core/lora/merged_weight.h"
#include "core/models/linear_adapter.h"
#include "core/models/model_family.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/loaded_model.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_file.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::diffusiond::testing::load_test_model;
using ::diffusiond::testing::LoadedModel;
using ::diffusiond::testing::max_abs_diff;
using ::diffusiond::testing::StatusIs;
using ::diffusiond::testing::TempDir;
using ::diffusiond::testing::TensorFile;
using ::testing::HasSubstr;

std::string lora_fixture() { return ::diffusiond::testing::fixture_folder("DIFFUSIOND_LORA_FIXTURE", "lora-tiny"); }

nlohmann::json read_lora_fixture_json(const std::string& name) {
  return ::diffusiond::testing::read_json_file(lora_fixture() + "/" + name);
}

// Every tensor name of a safetensors file.
std::vector<std::string> safetensors_names(const std::string& path) {
  std::vector<std::string> names;
  absl::StatusOr<std::unique_ptr<Checkpoint>> c = Checkpoint::open(path);
  EXPECT_THAT(c, IsOk());
  if (c.ok()) {
    for (const TensorRecord& t : (*c)->tensors()) names.push_back(t.name);
  }
  return names;
}

// Copies the safetensors file `from` to `to` without the tensors whose name
// ends with `suffix`.
void copy_lora_without(const std::string& from, const std::string& to, const std::string& suffix) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(from);
  ASSERT_THAT(src, IsOk());
  std::vector<const TensorRecord*> kept;
  std::vector<TensorSpec> specs;
  for (const TensorRecord& t : (*src)->tensors()) {
    if (absl::EndsWith(t.name, suffix)) continue;
    kept.push_back(&t);
    specs.push_back({t.name, t.dtype, t.shape});
  }
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> writer = SafetensorsWriter::create(to, specs);
  ASSERT_THAT(writer, IsOk());
  for (const TensorRecord* t : kept) {
    std::string bytes(t->nbytes, '\0');
    ASSERT_THAT((*src)->read(*t, bytes.data()), IsOk());
    ASSERT_THAT((*writer)->append(bytes.data(), t->nbytes), IsOk());
  }
  ASSERT_THAT((*writer)->close(), IsOk());
}

// A LinearAdapter that forwards to a set and records which of its weights a
// forward multiplied: each must be, or a term was silently skipped.
class RecordingAdapter final : public LinearAdapter {
 public:
  explicit RecordingAdapter(const AdapterSet& set) : set_(set) {}
  torch::Tensor add_term(torch::Tensor y, const torch::Tensor& x, absl::string_view weight) const override {
    if (set_.terms(weight) != nullptr) seen_.insert(std::string(weight));
    return set_.add_term(std::move(y), x, weight);
  }
  const std::set<std::string>& seen() const { return seen_; }

 private:
  const AdapterSet& set_;
  mutable std::set<std::string> seen_;  // one forward thread
};

// Largest elementwise distance in float32 ulps of the expected value. Where
// W + s·B·A cancels to (nearly) zero, the two float64 merges may differ by
// float64's rounding of the operands instead (upstream may land on an exact
// 0): distances below 2^-50 of the largest weight count as none.
double max_float32_ulps(const torch::Tensor& got, const torch::Tensor& expected) {
  const torch::Tensor e = expected.to(torch::kFloat64);
  const double floor = e.abs().max().item<double>() * std::ldexp(1.0, -50);
  const torch::Tensor ulp = (e.abs() * std::ldexp(1.0, -23)).clamp_min(floor);
  return ((got.to(torch::kFloat64) - e).abs() / ulp).max().item<double>();
}

// The fixture model keys: the variant names which of them it has.
const char* const kLoraFixtureModels[] = {"flux", "zimage", "qwenimage", "wan"};

class LoraParity : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!variant_.at("models").contains(key())) GTEST_SKIP() << "the variant has no " << key();
    spec_ = variant_.at("models").at(key());
    stats_ = stats_json_.at("models").at(key());
    base_ = lora_fixture() + "/" + spec_.at("base").get<std::string>();
    tolerance_ = 10 * stats_.at("noise_floor").get<double>();
  }

  std::string key() const { return GetParam(); }

  // The base transformer from the base fixture's files, as its parity test
  // loads it.
  LoadedModel load_base(bool fp8) {
    ModelLoadOptions options;
    if (fp8) options.fp8.format = Fp8Format::kE4M3Fn;
    const std::string folder = tmp_.path(fp8 ? "base_fp8" : "base");
    ::diffusiond::testing::fixture_model_folder(folder, base_ + "/config.json",
                                                base_ + "/transformer/diffusion_pytorch_model.safetensors",
                                                base_ + "/scheduler_config.json");
    LoadedModel l = load_test_model(folder, options);
    EXPECT_NE(l.get<Model>(), nullptr);
    return l;
  }

  // `<key>.fwd.*` as the model's Step takes them.
  NamedTensors step_inputs(const Model& model) const {
    NamedTensors in;
    const std::string prefix = key() + ".fwd.";
    for (const std::string& name : safetensors_names(lora_fixture() + "/io.safetensors")) {
      if (!absl::StartsWith(name, prefix) || name == prefix + "out") continue;
      in[name.substr(prefix.size())] = io_.get(name);
    }
    if (model.architecture() == "z-image") {
      // One item: Step takes a batch of latents and one caption per item.
      in["x"] = in["x"].unsqueeze(0);
      in["cap_feats_0"] = in["cap_feats"];
      in.erase("cap_feats");
    }
    if (model.architecture() == "qwen-image") {
      // One image per item, its patch grid from the base fixture's latents.
      const torch::Tensor latents = TensorFile(base_ + "/io.safetensors").get("pack.latents");
      in["img_shapes"] = torch::tensor({int64_t{1}, latents.size(3) / 2, latents.size(4) / 2}).view({1, 3});
    }
    return in;
  }

  // Runs `model`'s Step with `set` attached; checks every weight the set
  // changes was multiplied.
  torch::Tensor forward(const Model& model, const AdapterSet& set, const torch::Tensor& expected) const {
    RecordingAdapter recording(set);
    absl::StatusOr<NamedTensors> out;
    {
      LinearAdapterScope scope(model, recording);
      out = model.step(step_inputs(model));
    }
    EXPECT_THAT(out, IsOk());
    if (!out.ok()) return torch::Tensor();
    const std::vector<std::string> weights = set.weights();
    EXPECT_EQ(recording.seen(), std::set<std::string>(weights.begin(), weights.end()));
    torch::Tensor y = out->at("out");
    if (y.dim() == expected.dim() + 1) y = y.squeeze(0);
    EXPECT_EQ(y.sizes(), expected.sizes());
    return y;
  }

  // The file of `lora` in `format`; empty when the variant has none.
  std::string file_of(const std::string& lora, const std::string& format) const {
    return absl::StrCat(lora_fixture(), "/", key(), "/", lora, ".", format, ".safetensors");
  }

  // Loads `path` for `model`. A file with DoRA keys must be refused naming
  // them; what upstream applies of it (its plain LoRA) is loaded from a
  // copy without them.
  std::shared_ptr<const LoraAdapter> load_adapter(const Model& model, const std::string& path) {
    std::string readable = path;
    const std::vector<std::string> names = safetensors_names(path);
    for (const std::string& name : names) {
      if (!absl::EndsWith(name, ".dora_scale")) continue;
      EXPECT_THAT(LoraAdapter::read(path, model.architecture(), torch::kFloat32),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(name)));
      readable = tmp_.path(std::filesystem::path(path).filename().string());
      copy_lora_without(path, readable, ".dora_scale");
      break;
    }
    absl::StatusOr<std::unique_ptr<LoraFile>> file = LoraFile::open(readable);
    EXPECT_THAT(file, IsOk());
    if (!file.ok()) return nullptr;
    absl::StatusOr<LoraPlan> plan = plan_lora(**file, model.architecture());
    EXPECT_THAT(plan, IsOk());
    if (!plan.ok()) return nullptr;
    // Nothing of the file is left out: every tensor is some module's A, B
    // or alpha.
    size_t used = 0;
    for (const auto* list : {&plan->modules, &plan->text_encoder_modules}) {
      for (const PlannedLoraModule& m : *list) used += 2 + (m.alpha != nullptr ? 1 : 0);
    }
    EXPECT_EQ(used, (*file)->tensors().size());
    absl::StatusOr<std::unique_ptr<LoraAdapter>> adapter = LoraAdapter::load(**file, *plan, compute_dtype(model));
    EXPECT_THAT(adapter, IsOk());
    if (!adapter.ok()) return nullptr;
    return std::shared_ptr<const LoraAdapter>(std::move(*adapter));
  }

  // The formats every LoRA of `c` has a file in.
  std::vector<std::string> formats_of_case(const nlohmann::json& c) const {
    std::vector<std::string> out;
    for (const auto& format : spec_.at("loras").at(c.at(0).at(0).get<std::string>()).at("formats")) {
      bool all = true;
      for (const auto& entry : c) {
        const auto& formats = spec_.at("loras").at(entry.at(0).get<std::string>()).at("formats");
        all = all && std::find(formats.begin(), formats.end(), format) != formats.end();
      }
      if (all) out.push_back(format.get<std::string>());
    }
    return out;
  }

  // The adapters of case `c` in `format`, with their weights.
  std::vector<WeightedLoraAdapter> case_adapters(const Model& model, const nlohmann::json& c,
                                                 const std::string& format) {
    std::vector<WeightedLoraAdapter> adapters;
    for (const auto& entry : c) {
      const std::string lora = entry.at(0).get<std::string>();
      adapters.push_back({load_adapter(model, file_of(lora, format)), entry.at(1).get<double>()});
    }
    return adapters;
  }

  // The modules upstream converted the case's files to: what the set must
  // change.
  std::set<std::string> upstream_targets(const nlohmann::json& c) const {
    std::set<std::string> out;
    for (const auto& entry : c) {
      for (const auto& m : stats_.at("loras").at(entry.at(0).get<std::string>()).at("targeted_modules")) {
        out.insert(m.get<std::string>() + ".weight");
      }
    }
    return out;
  }

  const nlohmann::json variant_ = read_lora_fixture_json("variant.json");
  const nlohmann::json stats_json_ = read_lora_fixture_json("stats.json");
  nlohmann::json spec_, stats_;
  std::string base_;
  double tolerance_ = 0;
  TempDir tmp_;
  TensorFile io_{lora_fixture() + "/io.safetensors"};
};

TEST_P(LoraParity, SidecarForwardAndMergedWeightsMatchUpstream) {
  LoadedModel l = load_base(/*fp8=*/false);
  const Model* model = l.get<Model>();
  ASSERT_NE(model, nullptr);
  for (const auto& [name, c] : variant_.at("cases").items()) {
    const torch::Tensor expected = io_.get(absl::StrCat(key(), ".", name, ".out"));
    for (const std::string& format : formats_of_case(c)) {
      SCOPED_TRACE(absl::StrCat(key(), " ", name, " ", format));
      absl::StatusOr<std::unique_ptr<AdapterSet>> set = AdapterSet::create(*model, case_adapters(*model, c, format));
      ASSERT_THAT(set, IsOk());
      const std::vector<std::string> weights = (*set)->weights();
      EXPECT_EQ(std::set<std::string>(weights.begin(), weights.end()), upstream_targets(c));

      const torch::Tensor out = forward(*model, **set, expected);
      ASSERT_TRUE(out.defined());
      const double diff = max_abs_diff(out, expected);
      std::printf("%s %s %s: forward vs upstream %.3g (tolerance %.3g, LoRA effect %.3g)\n", key().c_str(),
                  name.c_str(), format.c_str(), diff, tolerance_,
                  stats_.at("cases").at(name).at("lora_effect_absmax").get<double>());
      EXPECT_LT(diff, tolerance_);

      for (const auto& module : spec_.at("merged")) {
        const std::string weight = module.get<std::string>() + ".weight";
        absl::StatusOr<torch::Tensor> merged = merged_weight(**set, weight, torch::kFloat32);
        ASSERT_THAT(merged, IsOk());
        const double ulps = max_float32_ulps(*merged, io_.get(absl::StrCat(key(), ".", name, ".merged.", weight)));
        std::printf("  merged %s: %.3g ulps\n", weight.c_str(), ulps);
        EXPECT_LE(ulps, 1.0) << weight;
      }
    }
  }
}

// Adapters change nothing of the base: a forward without them after
// forwards with them is the base forward.
TEST_P(LoraParity, DetachedForwardIsTheBase) {
  LoadedModel l = load_base(/*fp8=*/false);
  const Model* model = l.get<Model>();
  ASSERT_NE(model, nullptr);
  const nlohmann::json& c = variant_.at("cases").begin().value();
  absl::StatusOr<std::unique_ptr<AdapterSet>> set =
      AdapterSet::create(*model, case_adapters(*model, c, formats_of_case(c).at(0)));
  ASSERT_THAT(set, IsOk());
  const torch::Tensor base = io_.get(key() + ".fwd.out");
  const torch::Tensor with = forward(*model, **set, base);
  absl::StatusOr<NamedTensors> without = model->step(step_inputs(*model));
  ASSERT_THAT(without, IsOk());
  torch::Tensor y = without->at("out");
  if (y.dim() == base.dim() + 1) y = y.squeeze(0);
  EXPECT_GT(max_abs_diff(with, base), 100 * tolerance_);
  EXPECT_LT(max_abs_diff(y, base), tolerance_);
}

// FP8 storage: the adapters run beside the FP8 weights, which stay FP8;
// the result is the decoded weights' forward with the adapters merged.
TEST_P(LoraParity, Fp8BaseSidecarIsTheMergedDecodedForward) {
  LoadedModel l = load_base(/*fp8=*/true);
  const Model* model = l.get<Model>();
  ASSERT_NE(model, nullptr);
  ASSERT_GT(model->weights().fp8_count(), 0);
  absl::StatusOr<std::shared_ptr<const LoadRecipe>> recipe =
      [&]() -> absl::StatusOr<std::shared_ptr<const LoadRecipe>> {
    const ModelFamily* family = find_model_family(*l.checkpoint);
    if (family == nullptr) return absl::NotFoundError("no family");
    absl::StatusOr<std::unique_ptr<LoadRecipe>> r = family->recipe(*l.checkpoint);
    if (!r.ok()) return r.status();
    return std::shared_ptr<const LoadRecipe>(std::move(*r));
  }();
  ASSERT_THAT(recipe, IsOk());
  for (const auto& [name, c] : variant_.at("cases").items()) {
    const std::string format = formats_of_case(c).at(0);
    SCOPED_TRACE(absl::StrCat(key(), " ", name, " ", format, " over FP8"));
    absl::StatusOr<std::unique_ptr<AdapterSet>> set = AdapterSet::create(*model, case_adapters(*model, c, format));
    ASSERT_THAT(set, IsOk());
    int fp8_targets = 0;
    for (const std::string& w : (*set)->weights()) fp8_targets += model->weights().is_fp8(w) ? 1 : 0;
    EXPECT_GT(fp8_targets, 0);

    // The reference: every weight decoded to float32, the targeted ones
    // with the adapters merged in (float64, rounded once).
    auto merged = std::make_unique<WeightStore>(torch::kFloat32);
    for (const std::string& w : model->weights().names()) {
      absl::StatusOr<torch::Tensor> t = merged_weight(**set, w, torch::kFloat32);
      ASSERT_THAT(t, IsOk());
      merged->add(w, *t);
    }
    absl::StatusOr<std::unique_ptr<Model>> reference = (*recipe)->build(std::move(merged));
    ASSERT_THAT(reference, IsOk());
    absl::StatusOr<NamedTensors> want = (*reference)->step(step_inputs(**reference));
    ASSERT_THAT(want, IsOk());

    const torch::Tensor expected = want->at("out");
    const torch::Tensor out = forward(*model, **set, expected);
    ASSERT_TRUE(out.defined());
    const double diff = max_abs_diff(out, expected);
    std::printf("%s %s %s over FP8: sidecar vs merged decoded forward %.3g (vs upstream's float32 weights %.3g)\n",
                key().c_str(), name.c_str(), format.c_str(), diff,
                max_abs_diff(out, io_.get(absl::StrCat(key(), ".", name, ".out"))));
    EXPECT_LT(diff, tolerance_);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, LoraParity, ::testing::ValuesIn(kLoraFixtureModels),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace diffusiond
