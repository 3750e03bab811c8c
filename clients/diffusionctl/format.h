// How diffusionctl prints results for people: short byte counts and
// durations, aligned tables, the model and cache views; and the JSON form
// of any response for --json.
//
// Not here: progress while a call runs (progress.h).
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_FORMAT_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_FORMAT_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <string>
#include <vector>

#include "diffusiond/v1/cache_service.pb.h"
#include "diffusiond/v1/model_service.pb.h"

namespace diffusiond::ctl {

// "512 B", "1.50 KiB", "6.12 GiB": binary units, two decimals.
std::string short_bytes(int64_t bytes);

// "4s", "2m05s", "1h02m", "3d04h": whole units, for idle times; "-" for a
// negative or non-finite count.
std::string short_duration(double seconds);

// Left-aligned columns two spaces apart, one line per row; the first row is
// the header. Rows shorter than the header are padded with empty cells.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

// One "name  value" line per field of `info`, for `load`.
std::string format_model_info(const v1::ModelInfo& info);

// The `ls` table; "no models loaded\n" when `models` is empty. A VRAM column
// appears when any model holds VRAM, a STREAMED/STEP column when any
// streams weights, and a last VRAM PLAN column when any is placed.
std::string format_models(const google::protobuf::RepeatedPtrField<v1::ModelInfo>& models);

// The `available` table: PATH, FORMAT, ARCHITECTURE, ROLE, FILES and the
// RAM a load reserves at each FP8 setting; with `all`, the ones that cannot
// be loaded too, with an ERROR column. "nothing loadable in the models
// directory\n" when none is listed.
std::string format_available(const v1::ListAvailableResponse& response, bool all);

// One `events` line: the kind, tier, model and what the event carries.
std::string format_watch_event(const v1::WatchEvent& event);

// The `stats` view: budgets, cached models, counters and RSS.
std::string format_stats(const v1::GetStatsResponse& stats);

// `message` as one line of proto3 JSON, with the .proto field names and
// every field, defaults included, plus a newline.
std::string to_json(const google::protobuf::Message& message);

}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_FORMAT_H_
