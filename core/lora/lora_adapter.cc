#include "core/lora/lora_adapter.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

absl::StatusOr<LoraModule> load_module(const LoraFile& file, const PlannedLoraModule& p, torch::ScalarType dtype) {
  LoraModule m;
  m.source = p.source;
  m.modules = p.target.modules;
  m.text_encoder = p.text_encoder;
  DIFFUSIOND_ASSIGN_OR_RETURN(m.down, file.read(*p.down, dtype));
  DIFFUSIOND_ASSIGN_OR_RETURN(m.up, file.read(*p.up, dtype));
  double alpha = static_cast<double>(p.rank);
  if (p.metadata_alpha) alpha = *p.metadata_alpha;
  if (p.alpha != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor a, file.read(*p.alpha, torch::kFloat64));
    const double stored = a.reshape({}).item<double>();
    // Upstream lets the metadata win without a word; a file that says two
    // things is refused instead.
    if (p.metadata_alpha && *p.metadata_alpha != stored) {
      return absl::InvalidArgumentError(absl::StrCat(bounded(file.path()), ": '", bounded(p.source), "' has alpha ",
                                                     stored,
                                                     ", but the metadata says lora_alpha = ", *p.metadata_alpha));
    }
    alpha = stored;
  }
  m.scale = alpha / (p.rslora ? std::sqrt(static_cast<double>(p.rank)) : static_cast<double>(p.rank));
  if (p.target.swap_halves) {
    const int64_t rows = m.up.size(0);
    if (rows % 2 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(bounded(file.path()), ": '", bounded(p.source),
                                                     "' has lora_up of ", rows,
                                                     " rows; a modulation's [shift; scale] needs an even count"));
    }
    m.up = torch::cat({m.up.narrow(0, rows / 2, rows / 2), m.up.narrow(0, 0, rows / 2)});
  }
  return m;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoraAdapter>> LoraAdapter::load(const LoraFile& file, const LoraPlan& plan,
                                                               torch::ScalarType dtype) {
  std::unique_ptr<LoraAdapter> adapter(new LoraAdapter());
  adapter->path_ = plan.path;
  adapter->architecture_ = plan.architecture;
  adapter->format_ = plan.format;
  adapter->dtype_ = dtype;
  const std::string what = absl::StrCat("loading LoRA adapter ", bounded(file.path()));
  DIFFUSIOND_RETURN_IF_ERROR(status_of(what, [&]() -> absl::Status {
    for (const PlannedLoraModule& p : plan.modules) {
      DIFFUSIOND_ASSIGN_OR_RETURN(LoraModule m, load_module(file, p, dtype));
      adapter->modules_.push_back(std::move(m));
    }
    for (const PlannedLoraModule& p : plan.text_encoder_modules) {
      DIFFUSIOND_ASSIGN_OR_RETURN(LoraModule m, load_module(file, p, dtype));
      adapter->text_encoder_modules_.push_back(std::move(m));
    }
    return absl::OkStatus();
  }));
  for (const std::vector<LoraModule>* list : {&adapter->modules_, &adapter->text_encoder_modules_}) {
    for (const LoraModule& m : *list) adapter->nbytes_ += m.down.nbytes() + m.up.nbytes();
  }
  return adapter;
}

absl::StatusOr<std::unique_ptr<LoraAdapter>> LoraAdapter::read(absl::string_view path, absl::string_view architecture,
                                                               torch::ScalarType dtype) {
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<LoraFile> file, LoraFile::open(path));
  DIFFUSIOND_ASSIGN_OR_RETURN(LoraPlan plan, plan_lora(*file, architecture));
  return load(*file, plan, dtype);
}

}  // namespace diffusiond
