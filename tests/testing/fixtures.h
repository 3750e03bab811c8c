// Locating the shared reference fixtures (produced by upstream diffusers and
// an exact-arithmetic FP8 oracle) from tests.
#ifndef DIFFUSIOND_TESTS_TESTING_FIXTURES_H_
#define DIFFUSIOND_TESTS_TESTING_FIXTURES_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/util/file_text.h"
#include "core/util/json.h"
#include "gtest/gtest.h"

namespace diffusiond::testing {

// Returns $DIFFUSIOND_FIXTURES if set, else the fixtures folder beside the
// checkout (configured at build time).
inline std::string fixtures_dir() {
  if (const char* env = std::getenv("DIFFUSIOND_FIXTURES"); env != nullptr && *env != '\0') {
    return env;
  }
  return DIFFUSIOND_FIXTURES_DIR;
}

// The checkout's docs/ folder: the real configs in docs/configs are sized
// by tests, so the figures docs/models.md quotes cannot drift.
inline std::string docs_dir() { return DIFFUSIOND_DOCS_DIR; }

// Returns the folder of one reference fixture: $`env_var` if set (parity
// tests must pass unchanged on another fixture of the same layout), else
// fixtures_dir()/`default_name`.
inline std::string fixture_folder(const char* env_var, const char* default_name) {
  if (const char* env = std::getenv(env_var); env != nullptr && *env != '\0') return env;
  return fixtures_dir() + "/" + default_name;
}

// Returns the bytes of fixtures_dir()/relative, or an empty vector if absent
// (tests then fail naming the file: the fixtures are part of the suite).
inline std::vector<char> read_fixture(const std::string& relative) {
  std::ifstream in(fixtures_dir() + "/" + relative, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Parses the JSON file at `path` (a fixture's config, stats or tokens). A
// file that is missing or malformed fails the test and reads as {}.
inline nlohmann::json read_json_file(const std::string& path) {
  absl::StatusOr<std::string> text = read_text_file(path, 64 << 20);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return nlohmann::json::object();
  absl::StatusOr<nlohmann::json> parsed = parse_json_strict(*text, path);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *std::move(parsed) : nlohmann::json::object();
}

// The strings of a JSON array (a fixture's lists of module names) as a set.
inline std::set<std::string> json_string_set(const nlohmann::json& list) {
  std::set<std::string> out;
  for (const auto& name : list) out.insert(name.get<std::string>());
  return out;
}

// Assembles a diffusers model folder at `folder` (created) from a
// fixture's files, which keep one config beside several weight folders:
// `config` as its config.json, `weights` as its
// diffusion_pytorch_model.safetensors and `scheduler` as its
// scheduler_config.json, all symlinked. Returns `folder`.
inline std::string fixture_model_folder(const std::string& folder, const std::string& config,
                                        const std::string& weights, const std::string& scheduler) {
  std::filesystem::create_directories(folder);
  std::filesystem::create_symlink(config, folder + "/config.json");
  std::filesystem::create_symlink(weights, folder + "/diffusion_pytorch_model.safetensors");
  std::filesystem::create_symlink(scheduler, folder + "/scheduler_config.json");
  return folder;
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_FIXTURES_H_
