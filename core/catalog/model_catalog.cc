#include "core/catalog/model_catalog.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/checkpoint/checkpoint.h"
#include "core/lora/lora_file.h"
#include "core/lora/lora_plan.h"
#include "core/lora/lora_rules.h"
#include "core/models/model_loader.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/pipeline_index.h"
#include "core/precision/torch_dtype.h"
#include "core/util/confined_path.h"
#include "core/util/file_text.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

absl::string_view available_format_name(AvailableModel::Format format) {
  switch (format) {
    case AvailableModel::Format::kSingleFile:
      return "safetensors";
    case AvailableModel::Format::kScaledFp8File:
      return "scaled-fp8";
    case AvailableModel::Format::kModelFolder:
      return "model-folder";
    case AvailableModel::Format::kShardedFolder:
      return "sharded-folder";
    case AvailableModel::Format::kPipeline:
      return "pipeline";
    case AvailableModel::Format::kLora:
      return "lora";
  }
  return "unknown";
}

namespace {

namespace fs = std::filesystem;

// One thing the walk found that may be loadable.
struct CatalogCandidate {
  enum class Kind { kFile, kFolder, kPipeline };
  Kind kind = Kind::kFile;
  std::string path;  // as reached under the root (symlinks kept): what a load names
  std::string rel;
  bool sharded = false;
};

// "size:mtime" of `path`, or "-" when it cannot be stat'ed: the part of a
// fingerprint one file gives.
std::string catalog_file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "-";
  return absl::StrCat(st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ";");
}

bool is_weights_name(const std::string& name) { return absl::EndsWith(name, ".safetensors"); }
bool is_shard_index_name(const std::string& name) { return absl::EndsWith(name, ".safetensors.index.json"); }

class CatalogWalk {
 public:
  CatalogWalk(const CatalogOptions& options, std::string root, CatalogListing* out)
      : options_(options), root_(std::move(root)), out_(out) {}

  void folder(const std::string& dir, const std::string& rel, int depth) {
    if (stopped_) return;
    std::vector<std::pair<std::string, bool>> entries;  // name, is a folder (after confinement)
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (++out_->entries_scanned > options_.max_entries) {
        stop(absl::StrCat("the entry limit (", options_.max_entries, ") was reached"));
        return;
      }
      const std::string name = it->path().filename().string();
      std::error_code type_ec;
      fs::file_status status = it->symlink_status(type_ec);
      if (type_ec) continue;
      if (fs::is_symlink(status)) {
        // Confined like loads: a link leading out is neither followed nor
        // listed.
        if (!resolve_confined_path(root_, it->path().string()).ok()) continue;
        status = it->status(type_ec);
        if (type_ec) continue;
      }
      if (fs::is_directory(status)) {
        entries.emplace_back(name, true);
      } else if (fs::is_regular_file(status)) {
        entries.emplace_back(name, false);
      }
    }
    std::sort(entries.begin(), entries.end());
    const auto has_file = [&](const auto& pred) {
      return std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return !e.second && pred(e.first); });
    };
    const auto join = [&](const std::string& name) { return rel.empty() ? name : absl::StrCat(rel, "/", name); };
    const bool pipeline = has_file([](const std::string& n) {
      return std::any_of(std::begin(kPipelineIndexFiles), std::end(kPipelineIndexFiles),
                         [&](const char* index) { return n == index; });
    });
    const bool config = has_file([](const std::string& n) { return n == "config.json"; });
    const bool shards = has_file(is_shard_index_name);
    const bool weights = has_file(is_weights_name);
    if (!rel.empty() && pipeline) {
      candidates_.push_back({CatalogCandidate::Kind::kPipeline, dir, rel, false});
    } else if (!rel.empty() && config && (weights || shards)) {
      // A model folder: its files are its weights, not candidates of their own.
      candidates_.push_back({CatalogCandidate::Kind::kFolder, dir, rel, shards});
      return;
    }
    for (const auto& [name, is_folder] : entries) {
      const std::string path = absl::StrCat(dir, "/", name);
      if (!is_folder) {
        if (!pipeline && is_weights_name(name))
          candidates_.push_back({CatalogCandidate::Kind::kFile, path, join(name)});
        continue;
      }
      if (depth >= options_.max_depth) {
        stop(absl::StrCat("the depth limit (", options_.max_depth, " folders) was reached at ", join(name)));
        continue;
      }
      folder(path, join(name), depth + 1);
    }
  }

  std::vector<CatalogCandidate> take_candidates() { return std::move(candidates_); }

 private:
  void stop(std::string reason) {
    if (!out_->truncated) out_->truncated_reason = std::move(reason);
    out_->truncated = true;
    // The entry limit ends the walk; the depth limit only skips that folder.
    if (out_->entries_scanned > options_.max_entries) stopped_ = true;
  }

  const CatalogOptions& options_;
  const std::string root_;
  CatalogListing* const out_;
  bool stopped_ = false;
  std::vector<CatalogCandidate> candidates_;
};

// What a candidate's plan reads besides tensor data: its files' sizes and
// modification times.
std::string catalog_fingerprint(const CatalogCandidate& c) {
  std::string print;
  if (c.kind == CatalogCandidate::Kind::kFile) {
    absl::StrAppend(&print, catalog_file_stamp(c.path));
    absl::StrAppend(&print, catalog_file_stamp((fs::path(c.path).parent_path() / "config.json").string()));
    return print;
  }
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(c.path, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) absl::StrAppend(&print, name, "=", catalog_file_stamp(c.path + "/" + name));
  return print;
}

// A single file no model recipe takes, read as a LoRA adapter: planned for
// every architecture with rules. False when none takes its keys (then the
// model's error stands).
bool describe_adapter(const CatalogCandidate& c, const CatalogOptions& options, AvailableModel* m) {
  absl::StatusOr<std::unique_ptr<LoraFile>> file = LoraFile::open(c.path);
  if (!file.ok()) return false;
  std::optional<LoraPlan> first;
  AvailableAdapter adapter;
  for (const LoraArchitectureRules* rules : lora_architectures()) {
    absl::StatusOr<LoraPlan> plan = plan_lora(**file, rules->architecture);
    if (!plan.ok()) continue;
    adapter.architectures.emplace_back(rules->architecture);
    if (!first.has_value()) first = *std::move(plan);
  }
  if (!first.has_value()) return false;
  std::sort(adapter.architectures.begin(), adapter.architectures.end());
  adapter.layout = std::string(lora_format_name(first->format));
  adapter.modules = static_cast<int64_t>(first->modules.size());
  adapter.text_encoder_modules = static_cast<int64_t>(first->text_encoder_modules.size());
  std::vector<std::string> targets;
  for (const std::vector<PlannedLoraModule>* list : {&first->modules, &first->text_encoder_modules}) {
    for (const PlannedLoraModule& module : *list) {
      adapter.min_rank = adapter.min_rank == 0 ? module.rank : std::min(adapter.min_rank, module.rank);
      adapter.max_rank = std::max(adapter.max_rank, module.rank);
    }
  }
  for (const PlannedLoraModule& module : first->modules) {
    targets.insert(targets.end(), module.target.modules.begin(), module.target.modules.end());
  }
  std::sort(targets.begin(), targets.end());
  if (targets.size() > kMaxListedTargets) targets.resize(kMaxListedTargets);
  adapter.targets = std::move(targets);
  const int64_t bytes = first->bytes(to_scalar_type(options.compute_dtype));
  m->format = AvailableModel::Format::kLora;
  m->role = "adapter";
  m->architecture = absl::StrJoin(adapter.architectures, ",");
  m->description = absl::StrCat(adapter.layout, " LoRA, ", adapter.modules, " modules, rank ", adapter.max_rank);
  m->sizes = {{std::nullopt, bytes, bytes, 0}};
  m->adapter = std::move(adapter);
  m->error.clear();
  return true;
}

AvailableModel describe_checkpoint(const CatalogCandidate& c, const CatalogOptions& options) {
  AvailableModel m;
  m.path = c.rel;
  m.format = c.kind == CatalogCandidate::Kind::kFile
                 ? AvailableModel::Format::kSingleFile
                 : (c.sharded ? AvailableModel::Format::kShardedFolder : AvailableModel::Format::kModelFolder);
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::open(c.path);
  if (!checkpoint.ok()) {
    m.error = std::string(checkpoint.status().message());
    if (c.kind == CatalogCandidate::Kind::kFile) describe_adapter(c, options, &m);
    return m;
  }
  const Checkpoint& ckpt = **checkpoint;
  if (ckpt.layout() == CheckpointLayout::kScaledFp8File) m.format = AvailableModel::Format::kScaledFp8File;
  for (const std::string& file : ckpt.files()) {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (!ec) m.file_bytes += static_cast<int64_t>(size);
  }
  m.tensors = static_cast<int64_t>(ckpt.tensors().size());
  std::vector<std::optional<Fp8Format>> settings = {std::nullopt};
  for (Fp8Format f : options.fp8_formats) settings.emplace_back(f);
  for (const std::optional<Fp8Format>& fp8 : settings) {
    ModelLoadOptions lo;
    lo.compute_dtype = to_scalar_type(options.compute_dtype);
    lo.fp8.format = fp8;
    absl::StatusOr<ModelPlan> plan = plan_model(ckpt, lo);
    if (!plan.ok()) {
      m.error = std::string(plan.status().message());
      m.sizes.clear();
      if (c.kind == CatalogCandidate::Kind::kFile && !fp8.has_value()) describe_adapter(c, options, &m);
      return m;
    }
    m.architecture = std::string(plan->family->name());
    m.role = std::string(model_role_name(plan->family->role()));
    m.description = plan->recipe->describe();
    m.sizes.push_back({fp8, plan->plan.reservation_bytes(), plan->plan.final_bytes, plan->plan.fp8_tensors()});
  }
  return m;
}

// A pipeline folder, from its model_index.json and its components as
// already described.
AvailableModel describe_pipeline(const CatalogCandidate& c, const std::map<std::string, AvailableModel>& by_path) {
  AvailableModel m;
  m.path = c.rel;
  m.format = AvailableModel::Format::kPipeline;
  m.role = "pipeline";
  const absl::StatusOr<PipelineIndex> index = read_pipeline_index(c.path);
  if (!index.ok()) {
    m.error = std::string(index.status().message());
    return m;
  }
  m.description = index->pipeline_class;
  const PipelineFamily* family = find_pipeline_family(index->pipeline_class);
  if (family == nullptr) {
    m.error = absl::StrCat("pipeline class ", index->pipeline_class, " is not supported");
    return m;
  }
  m.architecture = std::string(family->name());
  m.arguments = family->arguments();
  for (const PipelineComponent& component : family->components()) {
    m.components.push_back(component.name);
    if (!m.error.empty()) continue;
    const auto it = by_path.find(absl::StrCat(c.rel, "/", component.name));
    if (it == by_path.end()) {
      m.error = absl::StrCat("component ", component.name, " is missing or not a model folder");
    } else if (!it->second.error.empty()) {
      m.error = absl::StrCat("component ", component.name, ": ", it->second.error);
    } else {
      const AvailableModel& part = it->second;
      m.file_bytes += part.file_bytes;
      m.tensors += part.tensors;
      if (m.sizes.empty()) {
        m.sizes = part.sizes;
      } else {
        for (size_t i = 0; i < m.sizes.size() && i < part.sizes.size(); ++i) {
          m.sizes[i].reservation_bytes += part.sizes[i].reservation_bytes;
          m.sizes[i].final_bytes += part.sizes[i].final_bytes;
          m.sizes[i].fp8_tensors += part.sizes[i].fp8_tensors;
        }
      }
    }
  }
  if (!m.error.empty()) m.sizes.clear();
  return m;
}

}  // namespace

absl::StatusOr<CatalogListing> ModelCatalog::list() {
  std::error_code ec;
  const fs::path root = fs::canonical(options_.models_dir, ec);
  if (ec || !fs::is_directory(root, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the models directory ", options_.models_dir, " cannot be read: ", ec.message()));
  }
  CatalogListing listing;
  CatalogWalk walk(options_, root.string(), &listing);
  walk.folder(root.string(), "", 0);
  const std::vector<CatalogCandidate> candidates = walk.take_candidates();

  MutexLock lock(&mu_);
  std::map<std::string, Cached> seen;
  std::map<std::string, AvailableModel> by_path;
  // Components before their pipelines, which sum them.
  for (const CatalogCandidate& c : candidates) {
    if (c.kind == CatalogCandidate::Kind::kPipeline) continue;
    std::string fingerprint = catalog_fingerprint(c);
    const auto hit = cache_.find(c.path);
    Cached entry;
    if (hit != cache_.end() && hit->second.fingerprint == fingerprint) {
      entry = hit->second;
    } else {
      entry = {std::move(fingerprint), describe_checkpoint(c, options_)};
      ++listing.planned;
    }
    by_path[c.rel] = entry.model;
    seen[c.path] = std::move(entry);
  }
  cache_ = std::move(seen);  // what is gone is forgotten
  for (const CatalogCandidate& c : candidates) {
    if (c.kind == CatalogCandidate::Kind::kPipeline) by_path[c.rel] = describe_pipeline(c, by_path);
  }
  for (auto& [path, model] : by_path) listing.models.push_back(std::move(model));
  return listing;
}

}  // namespace diffusiond
