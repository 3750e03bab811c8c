#include "clients/diffusionctl/format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/util/bytes.h"

namespace diffusiond::ctl {

std::string short_bytes(int64_t bytes) {
  const char* const sign = bytes < 0 ? "-" : "";
  double magnitude = std::fabs(static_cast<double>(bytes));
  if (magnitude < kKiB) return absl::StrCat(bytes, " B");
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  magnitude /= kKiB;
  while (magnitude >= 1024.0 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    magnitude /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%s%.2f %s", sign, magnitude, kUnits[unit]);
}

std::string short_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  if (seconds >= 1e15) return ">1e15s";  // keeps the integer conversion below defined
  const int64_t s = static_cast<int64_t>(seconds);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, s % 86400 / 3600);
}

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return "";
  const size_t columns = rows.front().size();
  std::vector<size_t> width(columns, 0);
  for (const std::vector<std::string>& row : rows) {
    for (size_t c = 0; c < columns && c < row.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  }
  std::string text;
  for (const std::vector<std::string>& row : rows) {
    std::string line;
    for (size_t c = 0; c < columns; ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      absl::StrAppend(&line, cell,
                      c + 1 < columns ? std::string(width[c] - cell.size() + 2, ' ') : "");
    }
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&text, line, "\n");
  }
  return text;
}

std::string format_model_info(const v1::ModelInfo& info) {
  std::vector<std::vector<std::string>> rows = {
      {"model_id", info.model_id()},
      {"architecture", absl::StrCat(info.architecture(), info.role().empty() ? "" : absl::StrCat(" (", info.role(), ")"))},
      {"description", info.description()},
      {"compute_dtype", info.compute_dtype()},
      {"tensors", absl::StrCat(info.tensors(), " (", info.fp8_tensors(), " fp8)")},
      {"ram", format_bytes(info.ram_bytes())},
  };
  if (info.vram_bytes() != 0) rows.push_back({"vram", format_bytes(info.vram_bytes())});
  if (!info.vram_plan().empty()) rows.push_back({"vram_plan", info.vram_plan()});
  if (info.vram_streamed_bytes_per_step() != 0) {
    rows.push_back({"vram_streamed", absl::StrCat(format_bytes(info.vram_streamed_bytes_per_step()), " per step")});
  }
  for (const v1::ConditioningInput& in : info.conditioning()) {
    std::vector<std::string> dims;
    for (int64_t d : in.shape()) dims.push_back(d < 0 ? "L" : absl::StrCat(d));
    const std::string kind = in.scalar() ? absl::StrCat("scalar", in.required() ? "" : absl::StrCat(", default ", in.default_value()))
                                         : absl::StrCat("[", absl::StrJoin(dims, ", "), "]", in.required() ? "" : " optional");
    rows.push_back({"conditioning", absl::StrCat(in.name(), " ", kind, ": ", in.meaning())});
  }
  if (info.role() == "denoiser") rows.push_back({"negative", info.supports_negative() ? "supported" : "not taken"});
  rows.push_back({"pins", absl::StrCat(info.pins())});
  rows.push_back({"idle", short_duration(info.idle_seconds())});
  return format_table(rows);
}

std::string format_models(const google::protobuf::RepeatedPtrField<v1::ModelInfo>& models) {
  if (models.empty()) return "no models loaded\n";
  const auto any = [&](bool (*has)(const v1::ModelInfo&)) { return std::any_of(models.begin(), models.end(), has); };
  const bool vram = any([](const v1::ModelInfo& m) { return m.vram_bytes() != 0; });
  const bool streamed = any([](const v1::ModelInfo& m) { return m.vram_streamed_bytes_per_step() != 0; });
  const bool plan = any([](const v1::ModelInfo& m) { return !m.vram_plan().empty(); });
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ID", "ARCHITECTURE", "DTYPE", "FP8/TENSORS", "RAM"});
  if (vram) rows.back().push_back("VRAM");
  if (streamed) rows.back().push_back("STREAMED/STEP");
  rows.back().insert(rows.back().end(), {"PINS", "IDLE"});
  // Last: a plan is a phrase, as long as it needs to be.
  if (plan) rows.back().push_back("VRAM PLAN");
  for (const v1::ModelInfo& m : models) {
    rows.push_back({m.model_id(), m.architecture(), m.compute_dtype(),
                    absl::StrCat(m.fp8_tensors(), "/", m.tensors()), short_bytes(m.ram_bytes())});
    if (vram) rows.back().push_back(short_bytes(m.vram_bytes()));
    if (streamed) rows.back().push_back(short_bytes(m.vram_streamed_bytes_per_step()));
    rows.back().insert(rows.back().end(),
                       {absl::StrCat(m.pins()), short_duration(m.idle_seconds())});
    if (plan) rows.back().push_back(m.vram_plan().empty() ? "-" : m.vram_plan());
  }
  return format_table(rows);
}

std::string format_stats(const v1::GetStatsResponse& stats) {
  std::vector<std::vector<std::string>> budgets = {
      {"DEVICE", "CAPACITY", "RESERVED", "COMMITTED", "HIGH WATER"}};
  for (const v1::DeviceBudget& b : stats.budgets()) {
    budgets.push_back({b.device(), short_bytes(b.capacity_bytes()), short_bytes(b.reserved_bytes()),
                       short_bytes(b.committed_bytes()), short_bytes(b.high_water_bytes())});
  }
  return absl::StrCat(
      "budgets:\n", format_table(budgets), "\nmodels (", stats.models_size(), "):\n",
      format_models(stats.models()), "\n",
      format_table({{"hits", "misses", "evictions", "rejections", "RSS"},
                    {absl::StrCat(stats.hits()), absl::StrCat(stats.misses()),
                     absl::StrCat(stats.evictions()), absl::StrCat(stats.rejections()),
                     short_bytes(stats.process_resident_bytes())}}));
}

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  assert(status.ok() && "diffusiond messages hold no Any fields, so they always print");
  (void)status;
  return json + "\n";
}

}  // namespace diffusiond::ctl
