#include "core/text/clip_tokenizer_files.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/text/tokenizer_files.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// Overlays the tokens `file` names on `spec` (a later file wins).
void apply_token_names(const TokenizerConfig& file, ClipTokenizerSpec* spec) {
  if (!file.bos_token.empty()) spec->bos_token = file.bos_token;
  if (!file.eos_token.empty()) spec->eos_token = file.eos_token;
  if (!file.unk_token.empty()) spec->unk_token = file.unk_token;
  if (!file.pad_token.empty()) spec->bpe.pad_token = file.pad_token;
}

bool has_added(const std::vector<AddedToken>& tokens, const std::string& content) {
  for (const AddedToken& t : tokens) {
    if (t.content == content) return true;
  }
  return false;
}

// The slow tokenizer makes each named special token an added token, with
// its vocabulary id, so that it is cut out of the text like the others.
void add_special_tokens(ClipTokenizerSpec* spec) {
  TokenizerSpec& bpe = spec->bpe;
  for (const std::string* name : {&spec->bos_token, &spec->eos_token, &spec->unk_token, &bpe.pad_token}) {
    if (name->empty() || has_added(bpe.added_tokens, *name)) continue;
    for (const auto& [token, id] : bpe.vocab) {
      if (token == *name) {
        bpe.added_tokens.push_back({id, token, /*special=*/true});
        break;
      }
    }
  }
}

}  // namespace

absl::StatusOr<ClipTokenizerSpec> read_clip_tokenizer_files(absl::string_view dir) {
  namespace fs = std::filesystem;
  const fs::path folder{std::string(dir)};
  std::error_code ec;
  ClipTokenizerSpec spec;
  TokenizerSpec& bpe = spec.bpe;
  if (!fs::exists(folder / "vocab.json", ec) && fs::exists(folder / "tokenizer.json", ec)) {
    const std::string path = (folder / "tokenizer.json").string();
    DIFFUSIOND_ASSIGN_OR_RETURN(bpe, read_tokenizer_json_model(path, kClipEndOfWordSuffix));
    if (static_cast<int64_t>(bpe.merges.size()) > kClipMaxMerges) bpe.merges.resize(kClipMaxMerges);
  } else {
    const std::string vocab = (folder / "vocab.json").string(), merges = (folder / "merges.txt").string();
    bpe.source = absl::StrCat(vocab, " + ", merges);
    DIFFUSIOND_ASSIGN_OR_RETURN(bpe.vocab, read_vocab_json(vocab));
    MergesTxtFormat format;
    format.always_skip_first_line = true;
    format.max_lines = kClipMaxMerges;
    DIFFUSIOND_ASSIGN_OR_RETURN(bpe.merges, read_merges_txt(merges, format));
  }

  const std::string config_path = (folder / "tokenizer_config.json").string();
  if (fs::exists(config_path, ec)) {
    DIFFUSIOND_ASSIGN_OR_RETURN(TokenizerConfig config, read_tokenizer_config(config_path));
    if (!config.tokenizer_class.empty() && config.tokenizer_class != "CLIPTokenizer" &&
        config.tokenizer_class != "CLIPTokenizerFast") {
      return absl::InvalidArgumentError(
          absl::StrCat(config_path, ": tokenizer_class is \"", config.tokenizer_class, "\"; expected CLIPTokenizer"));
    }
    for (AddedToken& token : config.added_tokens) {
      if (!has_added(bpe.added_tokens, token.content)) bpe.added_tokens.push_back(std::move(token));
    }
    apply_token_names(config, &spec);
    spec.model_max_length = config.model_max_length;
    spec.clean_up_tokenization_spaces = config.clean_up_tokenization_spaces.value_or(false);
  }
  const std::string map_path = (folder / "special_tokens_map.json").string();
  if (fs::exists(map_path, ec)) {
    DIFFUSIOND_ASSIGN_OR_RETURN(const TokenizerConfig map, read_tokenizer_config(map_path));
    apply_token_names(map, &spec);
  }
  if (bpe.pad_token.empty()) bpe.pad_token = "<|endoftext|>";
  add_special_tokens(&spec);
  return spec;
}

absl::StatusOr<std::unique_ptr<ClipTokenizer>> load_clip_tokenizer(absl::string_view dir) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const ClipTokenizerSpec spec, read_clip_tokenizer_files(dir));
  return ClipTokenizer::create(spec);
}

}  // namespace diffusiond
