// The Qwen-VL text-encoder fixtures (qwen25vl-tiny, qwen3vl-tiny) laid out as
// a pipeline holds them, for the parity and EncodePrompt tests:
// <dir>/text_encoder/ (config.json and the weights, as the fixture has them
// or as two shards with renamed keys) beside <dir>/tokenizer/.
#ifndef DIFFUSIOND_TESTS_TESTING_QWEN_VL_FIXTURE_H_
#define DIFFUSIOND_TESTS_TESTING_QWEN_VL_FIXTURE_H_

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors_writer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/temp_dir.h"

namespace diffusiond::testing {

// Links `fixture`'s config.json, generation_config.json (when it has one)
// and tokenizer/ into `dir`/text_encoder and `dir`/tokenizer; the weights
// are linked too unless `rename` is given, which writes them as two shards
// and an index with each name mapped through it. Returns the text_encoder
// folder.
inline std::string write_pipeline_layout(const std::string& fixture, const TempDir& dir,
                                         const std::function<std::string(const std::string&)>& rename = nullptr) {
  namespace fs = std::filesystem;
  const fs::path te = dir.path("text_encoder");
  fs::create_directories(te);
  fs::create_symlink(fixture + "/config.json", te / "config.json");
  fs::create_directory_symlink(fixture + "/tokenizer", dir.path("tokenizer"));
  if (!rename) {
    fs::create_symlink(fixture + "/model.safetensors", te / "model.safetensors");
    return te.string();
  }
  absl::StatusOr<std::unique_ptr<Checkpoint>> src = Checkpoint::open(fixture + "/model.safetensors");
  EXPECT_TRUE(src.ok()) << src.status();
  if (!src.ok()) return te.string();
  const std::vector<TensorRecord>& tensors = (*src)->tensors();
  nlohmann::json index = {{"metadata", {{"total_size", (*src)->weight_bytes()}}},
                          {"weight_map", nlohmann::json::object()}};
  for (size_t s = 0; s < 2; ++s) {
    const std::string file = absl::StrCat("model-0000", s + 1, "-of-00002.safetensors");
    std::vector<const TensorRecord*> shard;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if ((i < tensors.size() / 2) == (s == 0)) shard.push_back(&tensors[i]);
    }
    std::vector<TensorSpec> specs;
    for (const TensorRecord* t : shard) specs.push_back({rename(t->name), t->dtype, t->shape});
    absl::StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::create((te / file).string(), specs);
    EXPECT_TRUE(w.ok()) << w.status();
    if (!w.ok()) return te.string();
    for (size_t i = 0; i < shard.size(); ++i) {
      std::string bytes(shard[i]->nbytes, '\0');
      EXPECT_TRUE((*src)->read(*shard[i], bytes.data()).ok());
      EXPECT_TRUE((*w)->append(bytes.data(), static_cast<int64_t>(bytes.size())).ok());
      index["weight_map"][specs[i].name] = file;
    }
    EXPECT_TRUE((*w)->close().ok());
  }
  dir.write("text_encoder/model.safetensors.index.json", index.dump());
  return te.string();
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_QWEN_VL_FIXTURE_H_
