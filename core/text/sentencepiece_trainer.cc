// train_unigram_model over the module's trainer (sentencepiece_library.h).
#include "core/text/sentencepiece_trainer.h"

#include <string>
#include <utility>
#include <vector>

#include "core/text/sentencepiece_library.h"

namespace diffusiond {

bool train_unigram_model(const std::vector<std::string>& sentences, const UnigramTrainingOptions& options,
                         std::string* serialized, std::string* error) {
  const SentencePieceLibrary* library = sentencepiece_library(error);
  if (library == nullptr) return false;
  const std::vector<std::pair<std::string, std::string>> args = {
      {"model_type", "unigram"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"hard_vocab_limit", "false"},
      {"character_coverage", "1.0"},
      {"byte_fallback", options.byte_fallback ? "true" : "false"},
      {"normalization_rule_name", "nmt_nfkc"},
      {"pad_id", "0"},
      {"eos_id", "1"},
      {"unk_id", "2"},
      {"bos_id", "-1"},
      {"pad_piece", "<pad>"},
      {"eos_piece", "</s>"},
      {"unk_piece", "<unk>"},
      {"num_threads", "1"},
      {"shuffle_input_sentence", "false"},
      {"minloglevel", "2"},
  };
  std::vector<const char*> keys, values, data;
  std::vector<size_t> sizes;
  for (const auto& [k, v] : args) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  for (const std::string& s : sentences) {
    data.push_back(s.data());
    sizes.push_back(s.size());
  }
  serialized->clear();
  error->clear();
  return library->train(keys.data(), values.data(), args.size(), data.data(), sizes.data(), sentences.size(),
                        append_to_string, serialized, append_to_string, error) != 0;
}

}  // namespace diffusiond
