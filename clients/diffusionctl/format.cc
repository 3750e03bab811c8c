#include "clients/diffusionctl/format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
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

std::string format_available(const v1::ListAvailableResponse& response, bool all) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"PATH", "FORMAT", "ARCHITECTURE", "ROLE", "FILES"};
  // The size columns follow the first listed model's FP8 settings (the
  // daemon plans every candidate at the same ones).
  std::vector<v1::Fp8Mode> settings;
  for (const v1::AvailableModel& m : response.models()) {
    if (!m.sizes().empty()) {
      for (const v1::AvailableSize& size : m.sizes()) settings.push_back(size.fp8());
      break;
    }
  }
  for (v1::Fp8Mode mode : settings) {
    std::string name = absl::AsciiStrToLower(v1::Fp8Mode_Name(mode));
    absl::StrReplaceAll({{"fp8_mode_", ""}}, &name);
    header.push_back(absl::StrCat("RAM FP8 ", name));
  }
  if (all) header.push_back("ERROR");
  rows.push_back(header);
  for (const v1::AvailableModel& m : response.models()) {
    if (!all && !m.error().empty()) continue;
    std::vector<std::string> row = {m.path(), m.format(), m.architecture().empty() ? "-" : m.architecture(),
                                    m.role().empty() ? "-" : m.role(), short_bytes(m.file_bytes())};
    for (size_t i = 0; i < settings.size(); ++i) {
      row.push_back(i < static_cast<size_t>(m.sizes_size())
                        ? short_bytes(m.sizes(static_cast<int>(i)).reservation_bytes())
                        : "-");
    }
    if (all) row.push_back(m.error());
    rows.push_back(std::move(row));
  }
  if (rows.size() == 1) return "nothing loadable in the models directory\n";
  return format_table(rows);
}

std::string format_watch_event(const v1::WatchEvent& event) {
  std::string kind = absl::AsciiStrToLower(v1::WatchEvent::Kind_Name(event.kind()));
  absl::StrReplaceAll({{"kind_", ""}, {"_", "-"}}, &kind);
  if (event.kind() == v1::WatchEvent::KIND_SNAPSHOT) {
    std::vector<std::string> ids;
    for (const v1::ModelInfo& m : event.models()) ids.push_back(m.model_id());
    std::string line = absl::StrCat(kind, ": ", ids.size(), ids.size() == 1 ? " model" : " models", " resident",
                                    ids.empty() ? "" : absl::StrCat(" (", absl::StrJoin(ids, ", "), ")"));
    if (event.events_lost() > 0) absl::StrAppend(&line, "; ", event.events_lost(), " events were lost");
    return line + "\n";
  }
  std::string line = absl::StrCat(kind, " ", event.tier());
  if (!event.model_id().empty()) absl::StrAppend(&line, " ", event.model_id());
  if (event.kind() == v1::WatchEvent::KIND_LOAD_PROGRESS) {
    const v1::LoadProgress& p = event.progress();
    absl::StrAppend(&line, " ", p.tensors_done(), "/", p.total_tensors(), " tensors, ", short_bytes(p.bytes_read()),
                    " of ", short_bytes(p.total_bytes()));
    return line + "\n";
  }
  if (event.ram_bytes() != 0) absl::StrAppend(&line, " ", short_bytes(event.ram_bytes()), " RAM");
  if (event.vram_bytes() != 0) absl::StrAppend(&line, " ", short_bytes(event.vram_bytes()), " VRAM");
  if (event.seconds() > 0) absl::StrAppend(&line, absl::StrFormat(" %.2fs", event.seconds()));
  if (!event.reason().empty()) absl::StrAppend(&line, " (", event.reason(), ")");
  if (!event.message().empty()) absl::StrAppend(&line, ": ", event.message());
  return line + "\n";
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
