// Checkpoint: one model's weights on disk, whatever the layout — a single
// .safetensors file, a diffusers or transformers folder (config.json plus
// one weights file or shards named by an index), or a ComfyUI "scaled fp8"
// single file — as one set of tensor records with positional reads.
//
// Layout detection happens once, here, and yields a typed result; nothing
// downstream sniffs names again.
#ifndef DIFFUSIOND_CORE_CHECKPOINT_CHECKPOINT_H_
#define DIFFUSIOND_CORE_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/random_access_file.h"
#include "core/checkpoint/safetensors.h"

namespace diffusiond {

enum class CheckpointLayout {
  kSingleFile,       // one .safetensors file
  kDiffusersFolder,  // config.json + weights (one file or shards; diffusers or
                     // transformers file names)
  kScaledFp8File,    // single file with ComfyUI scaled-fp8 weights
};
absl::string_view layout_name(CheckpointLayout layout);

// The per-tensor scale of one scaled-fp8 weight. weight = code * scale.
struct Fp8ScaleRef {
  std::string scale_tensor;        // "<layer>.scale_weight" or "<layer>.weight_scale"
  std::string input_scale_tensor;  // "<layer>.scale_input"/".input_scale", or ""
};

struct OpenOptions {
  // How files are opened; tests inject faults here. Default: open_random_access_file.
  FileOpener opener;
  // A config.json to use instead of the one in or beside the checkpoint
  // (a single file does not carry its config). Empty: none. The caller
  // confines the path.
  std::string config_path;
};

// Immutable after open(); thread-safe reads.
class Checkpoint {
 public:
  // Opens `path` (a file or a folder), reads and validates every header.
  // Returns NOT_FOUND for a missing path or shard, INVALID_ARGUMENT or
  // DATA_LOSS (naming file and tensor) for malformed content,
  // INVALID_ARGUMENT for a folder that is not a diffusers model folder, and
  // PERMISSION_DENIED or UNAVAILABLE naming the path for a file or folder
  // that cannot be read.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> open(absl::string_view path,
                                                          const OpenOptions& options = {});

  const std::string& path() const { return path_; }
  CheckpointLayout layout() const { return layout_; }
  // The model's config.json: OpenOptions::config_path when given, else the
  // folder's own, else a config.json beside a single file; empty if none.
  // It may describe another architecture than the weights (a folder of
  // mixed files): families check its class before trusting it.
  const std::string& config_json() const { return config_json_; }
  // config_json() parsed, once, at open (null when there is none): what
  // the families read, so a load parses its config.json once.
  const nlohmann::json& config() const { return config_; }
  // config_class_of(config()), read once at open.
  const std::string& config_class() const { return config_class_; }
  // Where config_json() came from; empty when there is none.
  const std::string& config_path() const { return config_path_; }
  // Whether it is OpenOptions::config_path: a config the caller chose,
  // which a load must use or refuse, never silently replace.
  bool config_given() const { return config_given_; }
  // The scheduler_config.json of the model's pipeline, if found: in the
  // folder, in a sibling scheduler/ folder (a pipeline's transformer/), or
  // beside a single file. Empty if none.
  const std::string& scheduler_config_json() const { return scheduler_config_json_; }
  // Every weight tensor, in read order (file, then offset). Scale tensors and
  // the scaled_fp8 marker of a scaled-fp8 file are not listed here.
  const std::vector<TensorRecord>& tensors() const { return tensors_; }
  // Returns the record named `name` (weights, scales or the marker), or null.
  const TensorRecord* find(absl::string_view name) const;
  // Scaled-fp8 weights: weight name -> its scale tensors.
  const std::map<std::string, Fp8ScaleRef>& fp8_scales() const { return fp8_scales_; }
  const std::vector<std::string>& files() const { return file_paths_; }
  // Sum of tensors()' bytes.
  int64_t weight_bytes() const { return weight_bytes_; }

  // Reads the bytes of `t` into `dst` (t.nbytes of them). Errors are the
  // file's (RandomAccessFile::read_at: DATA_LOSS, UNAVAILABLE), naming the
  // file, the offset and the tensor.
  absl::Status read(const TensorRecord& t, char* dst) const;
  // Reads `n` bytes starting `offset` bytes into `t`. REQUIRES: the range is
  // inside the tensor.
  absl::Status read_range(const TensorRecord& t, int64_t offset, int64_t n, char* dst) const;
  // Hints that the `n` bytes of t's file from `offset` bytes into `t` (past
  // its end too: the tensors after it) will be read soon
  // (RandomAccessFile::will_need), clamped to the file.
  void will_need(const TensorRecord& t, int64_t offset, int64_t n) const;

 private:
  Checkpoint() = default;
  absl::Status add_file(std::unique_ptr<RandomAccessFile> file);
  absl::Status classify_scaled_fp8();
  absl::Status read_configs(const OpenOptions& options);

  std::string path_;
  CheckpointLayout layout_ = CheckpointLayout::kSingleFile;
  std::string config_json_;
  nlohmann::json config_;
  std::string config_path_;
  std::string config_class_;
  bool config_given_ = false;
  std::string scheduler_config_json_;
  std::vector<std::unique_ptr<RandomAccessFile>> files_;
  std::vector<std::string> file_paths_;
  std::vector<TensorRecord> tensors_;
  std::map<std::string, TensorRecord, std::less<>> all_;  // weights + scales + marker
  std::map<std::string, Fp8ScaleRef> fp8_scales_;
  int64_t weight_bytes_ = 0;
};

// The class a config.json names — diffusers' "_class_name" or
// transformers' first "architectures" entry, else its text_config's — or ""
// when it names none or is not readable JSON.
std::string config_class_name(absl::string_view config_json);
// The same of a parsed config.
std::string config_class_of(const nlohmann::json& config);

struct ShardIndex {
  std::vector<std::string> shards;                // file names, in first-use order
  std::map<std::string, std::string> weight_map;  // tensor -> shard file name
};

// Parses a diffusers shard index (`*.safetensors.index.json`). Returns
// INVALID_ARGUMENT for a malformed index or a shard name that would leave
// the folder (a path separator or "..").
absl::StatusOr<ShardIndex> parse_shard_index(absl::string_view json,
                                             absl::string_view index_path);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CHECKPOINT_CHECKPOINT_H_
