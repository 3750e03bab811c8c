#include "core/checkpoint/checkpoint.h"

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/util/bounded_text.h"
#include "core/util/file_text.h"
#include "core/util/json.h"
#include "core/util/permission_error.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kLayoutNames[] = {"single-file", "diffusers-folder",
                                              "scaled-fp8-file"};
static_assert(sizeof(kLayoutNames) / sizeof(kLayoutNames[0]) == 3, "one name per layout");

// The weights file of a model folder, by the library that wrote it, in
// order of preference: diffusers, then transformers (whose folders may hold
// other .safetensors files beside the model's).
constexpr absl::string_view kWeightsFiles[] = {"diffusion_pytorch_model.safetensors",
                                               "model.safetensors"};
constexpr absl::string_view kIndexSuffix = ".safetensors.index.json";

// What a failed filesystem query of `path` means: the daemon may not look
// (PERMISSION_DENIED), or the filesystem failed (UNAVAILABLE).
absl::Status filesystem_error(const fs::path& path, const std::error_code& ec) {
  const std::string message = absl::StrCat(path.string(), ": ", ec.message());
  if (is_permission_error(ec)) return absl::PermissionDeniedError(message);
  return absl::UnavailableError(message);
}

bool is_marker(absl::string_view name) {
  return name == "scaled_fp8" || absl::EndsWith(name, ".scaled_fp8");
}

// Returns the first of kWeightsFiles (plus `suffix`) present in `found`.
std::optional<fs::path> preferred_file(const fs::path& dir, const std::vector<fs::path>& found,
                                       absl::string_view suffix) {
  for (absl::string_view name : kWeightsFiles) {
    const fs::path candidate = dir / absl::StrCat(name, suffix);
    if (std::find(found.begin(), found.end(), candidate) != found.end()) return candidate;
  }
  return std::nullopt;
}

// Finds the weight files of a diffusers or transformers folder: the shards of its index, or
// its one weights file.
absl::StatusOr<std::vector<std::string>> folder_weight_files(const fs::path& dir,
                                                             ShardIndex* index) {
  std::vector<fs::path> indexes, singles;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (absl::EndsWith(name, kIndexSuffix)) indexes.push_back(e.path());
    else if (absl::EndsWith(name, ".safetensors")) singles.push_back(e.path());
  }
  if (ec) return filesystem_error(dir, ec);
  std::sort(indexes.begin(), indexes.end());
  std::sort(singles.begin(), singles.end());
  if (!indexes.empty()) {
    std::optional<fs::path> chosen = preferred_file(dir, indexes, ".index.json");
    if (!chosen.has_value() && indexes.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir.string(), ": ", indexes.size(), " shard indexes and none is ", kWeightsFiles[0],
          ".index.json or ", kWeightsFiles[1], ".index.json; cannot tell which to load"));
    }
    if (!chosen.has_value()) chosen = indexes.front();
    DIFFUSIOND_ASSIGN_OR_RETURN(std::string text, read_text_file(chosen->string(), 64 << 20));
    DIFFUSIOND_ASSIGN_OR_RETURN(*index, parse_shard_index(text, chosen->string()));
    std::vector<std::string> files;
    for (const std::string& shard : index->shards) files.push_back((dir / shard).string());
    return files;
  }
  if (std::optional<fs::path> chosen = preferred_file(dir, singles, "")) {
    return std::vector<std::string>{chosen->string()};
  }
  if (singles.size() == 1) return std::vector<std::string>{singles.front().string()};
  return absl::InvalidArgumentError(absl::StrCat(
      dir.string(), ": model folder has ", singles.size(),
      " .safetensors files and no shard index; expected ", kWeightsFiles[0], " or ",
      kWeightsFiles[1]));
}

}  // namespace

absl::string_view layout_name(CheckpointLayout layout) {
  return kLayoutNames[static_cast<int>(layout)];
}

absl::StatusOr<ShardIndex> parse_shard_index(absl::string_view text,
                                             absl::string_view index_path) {
  DIFFUSIOND_ASSIGN_OR_RETURN(nlohmann::json root, parse_json_strict(text, index_path));
  if (!root.is_object() || !root.contains("weight_map") || !root.at("weight_map").is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(index_path, ": expected an object with a \"weight_map\" object"));
  }
  ShardIndex index;
  std::set<std::string> seen;
  for (const auto& [tensor, shard] : root.at("weight_map").items()) {
    if (!shard.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": weight_map entry '", tensor, "' is not a file name"));
    }
    const std::string& file = shard.get_ref<const std::string&>();
    if (file.empty() || file == "." || file == ".." || absl::StrContains(file, "/") ||
        absl::StrContains(file, "\\")) {
      return absl::InvalidArgumentError(absl::StrCat(
          index_path, ": shard name '", file, "' for tensor '", tensor,
          "' must be a plain file name inside the folder"));
    }
    index.weight_map[tensor] = file;
    if (seen.insert(file).second) index.shards.push_back(file);
  }
  if (index.shards.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": weight_map is empty"));
  }
  return index;
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::open(absl::string_view path,
                                                             const OpenOptions& options) {
  const FileOpener opener = options.opener ? options.opener : FileOpener(open_random_access_file);
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->path_ = std::string(path);
  std::error_code ec;
  const fs::path p(ckpt->path_);
  const fs::file_status st = fs::status(p, ec);
  if (is_permission_error(ec)) return filesystem_error(p, ec);
  if (ec || !fs::exists(st)) {
    return absl::NotFoundError(absl::StrCat(ckpt->path_, ": no such file or folder"));
  }
  std::vector<std::string> files;
  ShardIndex index;
  if (fs::is_directory(st)) {
    ckpt->layout_ = CheckpointLayout::kDiffusersFolder;
    const bool has_config = fs::exists(p / "config.json", ec);
    // An unreadable folder is not a folder without a config.
    if (ec) return filesystem_error(p / "config.json", ec);
    if (options.config_path.empty() && !has_config) {
      return absl::InvalidArgumentError(absl::StrCat(
          ckpt->path_, ": folder has no config.json, so it is not a diffusers model folder"));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(files, folder_weight_files(p, &index));
  } else {
    files.push_back(ckpt->path_);
  }
  for (const std::string& file : files) {
    absl::StatusOr<std::unique_ptr<RandomAccessFile>> f = opener(file);
    if (!f.ok()) {
      if (absl::IsNotFound(f.status()) && !index.shards.empty()) {
        return absl::NotFoundError(absl::StrCat("shard index of ", ckpt->path_,
                                                " names a missing shard: ",
                                                f.status().message()));
      }
      return f.status();
    }
    DIFFUSIOND_RETURN_IF_ERROR(ckpt->add_file(std::move(*f)));
  }
  for (const auto& [tensor, shard] : index.weight_map) {
    const TensorRecord* t = ckpt->find(tensor);
    if (t == nullptr || fs::path(ckpt->file_paths_[t->file_index]).filename() != shard) {
      return absl::DataLossError(absl::StrCat("shard index of ", ckpt->path_, " places '",
                                              tensor, "' in ", shard,
                                              ", but that shard does not hold it"));
    }
  }
  DIFFUSIOND_RETURN_IF_ERROR(ckpt->classify_scaled_fp8());
  DIFFUSIOND_RETURN_IF_ERROR(ckpt->read_configs(options));
  return ckpt;
}

std::string config_class_name(absl::string_view config_json) {
  if (config_json.empty()) return "";
  absl::StatusOr<nlohmann::json> config = parse_json_strict(config_json, "config.json");
  return config.ok() ? config_class_of(*config) : "";
}

std::string config_class_of(const nlohmann::json& config) {
  if (!config.is_object()) return "";
  if (config.contains("_class_name") && config.at("_class_name").is_string()) {
    return config.at("_class_name").get<std::string>();
  }
  if (config.contains("architectures") && config.at("architectures").is_array() &&
      !config.at("architectures").empty() && config.at("architectures")[0].is_string()) {
    return config.at("architectures")[0].get<std::string>();
  }
  // Some transformers versions write a composite model's class only in its
  // text_config (a Qwen3-VL saved from its language model).
  if (config.contains("text_config")) return config_class_of(config.at("text_config"));
  return "";
}

absl::Status Checkpoint::read_configs(const OpenOptions& options) {
  const fs::path p(path_);
  const bool folder = layout_ == CheckpointLayout::kDiffusersFolder;
  const fs::path dir = folder ? p : p.has_parent_path() ? p.parent_path() : fs::path(".");
  // Reads the first of `candidates` that exists; a malformed one is an
  // error, not a silent fallback to the next.
  const auto read_first = [](const std::vector<fs::path>& candidates, std::string* json, std::string* from,
                             nlohmann::json* parsed) -> absl::Status {
    for (const fs::path& c : candidates) {
      absl::StatusOr<std::string> text = read_text_file(c.string());
      if (absl::IsNotFound(text.status())) continue;
      if (!text.ok()) return text.status();
      DIFFUSIOND_ASSIGN_OR_RETURN(nlohmann::json root, parse_json_strict(*text, c.string()));
      if (parsed != nullptr) *parsed = std::move(root);
      *json = std::move(*text);
      if (from != nullptr) *from = c.string();
      return absl::OkStatus();
    }
    return absl::OkStatus();
  };
  if (!options.config_path.empty()) {
    config_given_ = true;
    DIFFUSIOND_RETURN_IF_ERROR(read_first({fs::path(options.config_path)}, &config_json_, &config_path_, &config_));
    if (config_json_.empty()) {
      return absl::NotFoundError(absl::StrCat(options.config_path, ": no such config file"));
    }
  } else {
    DIFFUSIOND_RETURN_IF_ERROR(read_first({dir / "config.json"}, &config_json_, &config_path_, &config_));
  }
  config_class_ = config_class_of(config_);
  return read_first({dir / "scheduler_config.json", dir.parent_path() / "scheduler" / "scheduler_config.json"},
                    &scheduler_config_json_, nullptr, nullptr);
}

absl::Status Checkpoint::add_file(std::unique_ptr<RandomAccessFile> file) {
  DIFFUSIOND_ASSIGN_OR_RETURN(SafetensorsHeader header, read_safetensors_header(*file));
  const int index = static_cast<int>(files_.size());
  for (TensorRecord& t : header.tensors) {
    t.file_index = index;
    if (all_.count(t.name) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          file->path(), ": tensor '", t.name, "' also appears in ",
          file_paths_[all_.find(t.name)->second.file_index]));
    }
    all_.emplace(t.name, t);
  }
  file_paths_.push_back(file->path());
  files_.push_back(std::move(file));
  return absl::OkStatus();
}

absl::Status Checkpoint::classify_scaled_fp8() {
  bool marker = false;
  std::set<std::string> not_weights;
  for (const auto& [name, t] : all_) {
    if (is_marker(name)) {
      marker = true;
      not_weights.insert(name);
      continue;
    }
    absl::string_view layer = name;
    const bool weight_scale = absl::ConsumeSuffix(&layer, ".scale_weight") ||
                              absl::ConsumeSuffix(&layer, ".weight_scale");
    const bool input_scale = !weight_scale && (absl::ConsumeSuffix(&layer, ".scale_input") ||
                                               absl::ConsumeSuffix(&layer, ".input_scale"));
    if (!weight_scale && !input_scale) continue;
    not_weights.insert(name);
    const std::string weight = absl::StrCat(layer, ".weight");
    const TensorRecord* w = find(weight);
    if (w == nullptr || !is_float8(w->dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": scale tensor '", name, "' has no FP8 weight '", weight, "' to scale"));
    }
    if (t.numel != 1 || !(t.dtype == DType::kF32 || t.dtype == DType::kF16 ||
                          t.dtype == DType::kBF16)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": scale tensor '", name, "' must be one F32/F16/BF16 value, got ",
          t.numel, " of ", dtype_name(t.dtype)));
    }
    Fp8ScaleRef& ref = fp8_scales_[weight];
    (weight_scale ? ref.scale_tensor : ref.input_scale_tensor) = name;
  }
  for (auto it = fp8_scales_.begin(); it != fp8_scales_.end(); ++it) {
    if (it->second.scale_tensor.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": FP8 weight '", it->first, "' has an input scale but no weight scale"));
    }
  }
  if ((marker || !fp8_scales_.empty()) && layout_ == CheckpointLayout::kSingleFile) {
    layout_ = CheckpointLayout::kScaledFp8File;
  }
  for (const auto& [name, t] : all_) {
    if (not_weights.count(name) == 0) tensors_.push_back(t);
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const TensorRecord& a, const TensorRecord& b) {
    return a.file_index != b.file_index ? a.file_index < b.file_index
                                        : a.file_offset < b.file_offset;
  });
  weight_bytes_ = 0;
  for (const TensorRecord& t : tensors_) weight_bytes_ += t.nbytes;
  return absl::OkStatus();
}

const TensorRecord* Checkpoint::find(absl::string_view name) const {
  auto it = all_.find(name);
  return it == all_.end() ? nullptr : &it->second;
}

absl::Status Checkpoint::read(const TensorRecord& t, char* dst) const {
  return read_range(t, 0, t.nbytes, dst);
}

void Checkpoint::will_need(const TensorRecord& t, int64_t offset, int64_t n) const {
  const RandomAccessFile& file = *files_[t.file_index];
  const int64_t begin = std::min(file.size(), t.file_offset + offset);
  file.will_need(begin, std::min(n, file.size() - begin));
}

absl::Status Checkpoint::read_range(const TensorRecord& t, int64_t offset, int64_t n,
                                    char* dst) const {
  assert(offset >= 0 && n >= 0 && offset + n <= t.nbytes);
  const absl::Status read = files_[t.file_index]->read_at(t.file_offset + offset, n, dst);
  if (read.ok()) return read;
  // The file's message names it and the offset; an operator also needs the
  // tensor that could not be read.
  return absl::Status(read.code(), absl::StrCat(read.message(), " (reading tensor '", bounded(t.name),
                                                "', bytes ", offset, " to ", offset + n, " of its ",
                                                t.nbytes, ")"));
}

}  // namespace diffusiond
