// Result formatting: units, durations, tables and JSON.
#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "clients/diffusionctl/format.h"

namespace diffusiond::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::ModelInfo model(const std::string& id, int64_t ram, int64_t vram = 0) {
  v1::ModelInfo m;
  m.set_model_id(id);
  m.set_architecture("z-image");
  m.set_description("dim 3840, 30 layers");
  m.set_compute_dtype("bfloat16");
  m.set_tensors(453);
  m.set_fp8_tensors(240);
  m.set_ram_bytes(ram);
  m.set_vram_bytes(vram);
  m.set_pins(1);
  m.set_idle_seconds(125.7);
  return m;
}

TEST(Format, AvailableTableHidesWhatCannotLoadUnlessAskedAll) {
  v1::ListAvailableResponse r;
  v1::AvailableModel* m = r.add_models();
  m->set_path("zimage");
  m->set_format("model-folder");
  m->set_architecture("z-image");
  m->set_role("denoiser");
  m->set_file_bytes(3 << 20);
  v1::AvailableSize* off = m->add_sizes();
  off->set_fp8(v1::FP8_MODE_OFF);
  off->set_reservation_bytes(int64_t{6} << 20);
  v1::AvailableSize* fp8 = m->add_sizes();
  fp8->set_fp8(v1::FP8_MODE_E4M3FN);
  fp8->set_reservation_bytes(int64_t{4} << 20);
  v1::AvailableModel* broken = r.add_models();
  broken->set_path("broken.safetensors");
  broken->set_format("safetensors");
  broken->set_error("not a safetensors header");
  const std::string text = format_available(r, false);
  EXPECT_THAT(text, HasSubstr("RAM FP8 off"));
  EXPECT_THAT(text, HasSubstr("RAM FP8 e4m3fn"));
  EXPECT_THAT(text, HasSubstr("6.00 MiB"));
  EXPECT_THAT(text, HasSubstr("4.00 MiB"));
  EXPECT_THAT(text, Not(HasSubstr("broken")));
  EXPECT_THAT(format_available(r, true), HasSubstr("not a safetensors header"));
  EXPECT_EQ(format_available(v1::ListAvailableResponse(), false), "nothing loadable in the models directory\n");
}

TEST(Format, WatchEventLines) {
  v1::WatchEvent snapshot;
  snapshot.set_kind(v1::WatchEvent::KIND_SNAPSHOT);
  snapshot.add_models()->set_model_id("a");
  snapshot.set_events_lost(5);
  EXPECT_EQ(format_watch_event(snapshot), "snapshot: 1 model resident (a); 5 events were lost\n");
  v1::WatchEvent evicted;
  evicted.set_kind(v1::WatchEvent::KIND_EVICTED);
  evicted.set_tier("ram");
  evicted.set_model_id("a");
  evicted.set_ram_bytes(1024);
  evicted.set_reason("least recently used");
  EXPECT_EQ(format_watch_event(evicted), "evicted ram a 1.00 KiB RAM (least recently used)\n");
  v1::WatchEvent progress;
  progress.set_kind(v1::WatchEvent::KIND_LOAD_PROGRESS);
  progress.set_tier("ram");
  progress.set_model_id("b");
  progress.mutable_progress()->set_tensors_done(2);
  progress.mutable_progress()->set_total_tensors(4);
  EXPECT_THAT(format_watch_event(progress), HasSubstr("load-progress ram b 2/4 tensors"));
}

TEST(Format, ShortBytes) {
  EXPECT_EQ(short_bytes(0), "0 B");
  EXPECT_EQ(short_bytes(1023), "1023 B");
  EXPECT_EQ(short_bytes(1536), "1.50 KiB");
  EXPECT_EQ(short_bytes(int64_t{6571} << 20), "6.42 GiB");
  EXPECT_EQ(short_bytes(-(int64_t{1} << 20)), "-1.00 MiB");
  EXPECT_EQ(short_bytes(INT64_MAX), "8.00 EiB");
}

TEST(Format, ShortDuration) {
  EXPECT_EQ(short_duration(0), "0s");
  EXPECT_EQ(short_duration(59.9), "59s");
  EXPECT_EQ(short_duration(125.7), "2m05s");
  EXPECT_EQ(short_duration(3725), "1h02m");
  EXPECT_EQ(short_duration(3 * 86400 + 4 * 3600 + 5), "3d04h");
  EXPECT_EQ(short_duration(-1), "-");
  EXPECT_EQ(short_duration(std::nan("")), "-");
}

TEST(Format, TableAlignsColumns) {
  EXPECT_EQ(format_table({{"ID", "RAM"}, {"long-model", "1 B"}, {"z"}}),
            "ID          RAM\n"
            "long-model  1 B\n"
            "z\n");
  EXPECT_EQ(format_table({}), "");
}

TEST(Format, ModelInfo) {
  const std::string text = format_model_info(model("z", int64_t{3} << 30));
  EXPECT_THAT(text, HasSubstr("model_id       z\n"));
  EXPECT_THAT(text, HasSubstr("description    dim 3840, 30 layers\n"));
  EXPECT_THAT(text, HasSubstr("tensors        453 (240 fp8)\n"));
  EXPECT_THAT(text, HasSubstr("ram            3.00 GiB (3221225472 bytes)\n"));
  EXPECT_THAT(text, HasSubstr("idle           2m05s\n"));
  EXPECT_THAT(text, Not(HasSubstr("vram")));
  EXPECT_THAT(format_model_info(model("z", 0, 1024)), HasSubstr("vram           1.00 KiB"));
  EXPECT_THAT(text, Not(HasSubstr("vram_plan")));
  v1::ModelInfo placed = model("z", 4096, 2048);
  placed.set_vram_plan("5 of 12 blocks resident, 7 streamed");
  placed.set_vram_streamed_bytes_per_step(3 << 20);
  const std::string placed_text = format_model_info(placed);
  EXPECT_THAT(placed_text, HasSubstr("vram_plan      5 of 12 blocks resident, 7 streamed\n"));
  EXPECT_THAT(placed_text, HasSubstr("vram_streamed  3.00 MiB (3145728 bytes) per step\n"));
}

TEST(Format, ModelsTable) {
  google::protobuf::RepeatedPtrField<v1::ModelInfo> models;
  EXPECT_EQ(format_models(models), "no models loaded\n");
  *models.Add() = model("z-image-turbo", int64_t{6} << 30);
  *models.Add() = model("tiny", 2048);
  EXPECT_EQ(format_models(models),
            "ID             ARCHITECTURE  DTYPE     FP8/TENSORS  RAM       PINS  IDLE\n"
            "z-image-turbo  z-image       bfloat16  240/453      6.00 GiB  1     2m05s\n"
            "tiny           z-image       bfloat16  240/453      2.00 KiB  1     2m05s\n");
  models.Mutable(1)->set_vram_bytes(1 << 20);
  EXPECT_THAT(format_models(models), HasSubstr("RAM       VRAM      PINS"));
  EXPECT_THAT(format_models(models), HasSubstr("6.00 GiB  0 B       1"));
  EXPECT_THAT(format_models(models), Not(HasSubstr("STREAMED")));
  models.Mutable(1)->set_vram_plan("all 12 blocks resident");
  EXPECT_THAT(format_models(models), HasSubstr("PINS  IDLE   VRAM PLAN\n"));
  EXPECT_THAT(format_models(models), HasSubstr("1     2m05s  all 12 blocks resident\n"));
  EXPECT_THAT(format_models(models), HasSubstr("1     2m05s  -\n"));
  models.Mutable(1)->set_vram_streamed_bytes_per_step(1 << 20);
  EXPECT_THAT(format_models(models), HasSubstr("RAM       VRAM      STREAMED/STEP  PINS"));
}

TEST(Format, Stats) {
  v1::GetStatsResponse stats;
  v1::DeviceBudget* cpu = stats.add_budgets();
  cpu->set_device("cpu");
  cpu->set_capacity_bytes(int64_t{12} << 30);
  cpu->set_reserved_bytes(0);
  cpu->set_committed_bytes(int64_t{6} << 30);
  cpu->set_high_water_bytes(int64_t{7} << 30);
  *stats.add_models() = model("z", int64_t{6} << 30);
  stats.set_hits(10);
  stats.set_misses(2);
  stats.set_evictions(1);
  stats.set_rejections(3);
  stats.set_process_resident_bytes(int64_t{13} << 29);
  const std::string text = format_stats(stats);
  EXPECT_THAT(text, HasSubstr("DEVICE  CAPACITY   RESERVED  COMMITTED  HIGH WATER\n"
                              "cpu     12.00 GiB  0 B       6.00 GiB   7.00 GiB\n"));
  EXPECT_THAT(text, HasSubstr("models (1):\nID "));
  EXPECT_THAT(text, HasSubstr("hits  misses  evictions  rejections  RSS\n"
                              "10    2       1          3           6.50 GiB\n"));
}

TEST(Format, JsonUsesProtoNamesAndPrintsDefaults) {
  const nlohmann::json json = nlohmann::json::parse(to_json(model("z", 5)));
  EXPECT_EQ(json["model_id"], "z");
  EXPECT_EQ(json["ram_bytes"], "5");  // proto3 JSON writes int64 as a string
  EXPECT_EQ(json["vram_bytes"], "0");
  EXPECT_EQ(json["pins"], 1);
}

}  // namespace
}  // namespace diffusiond::ctl
