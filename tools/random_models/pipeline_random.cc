#include "tools/random_models/pipeline_random.h"

#include <nlohmann/json.hpp>

#include "core/models/qwen3/qwen3_params.h"
#include "core/text/byte_level.h"
#include "core/util/status_macros.h"
#include "tools/random_models/random_weights.h"
#include "tools/random_models/vae_random.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

using json = nlohmann::ordered_json;

// Qwen2's pre-tokenizer, as tokenizer.json spells it.
constexpr char kQwenSplitRegex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kSpecialTokens[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"};

// The config as save_pretrained writes it: the parser's fields, and the
// tying and a dtype it does not read.
std::string qwen3_config_json(const Qwen3Config& config) {
  nlohmann::json j = to_json(config);
  j["tie_word_embeddings"] = true;
  j["torch_dtype"] = "bfloat16";
  return j.dump(2) + "\n";
}

// tokenizer.json: the byte symbols as the vocabulary, no merges, and the
// chat template's special tokens after them.
std::string tokenizer_json() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_symbols(std::string(1, static_cast<char>(b)))] = b;
  json added = json::array();
  int id = 256;
  for (const char* token : kSpecialTokens) {
    added.push_back({{"id", id++}, {"content", token}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                           {"use_regex", false}};
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", kQwenSplitRegex}}}, {"behavior", "Isolated"},
                           {"invert", false}},
                          byte_level}}};
  j["post_processor"] = byte_level;
  j["decoder"] = byte_level;
  j["model"] = {{"type", "BPE"},           {"dropout", nullptr},   {"unk_token", nullptr},
                {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                {"byte_fallback", false},  {"ignore_merges", false}, {"vocab", vocab},
                {"merges", json::array()}};
  return j.dump() + "\n";
}

std::string tokenizer_config_json() {
  json j;
  j["tokenizer_class"] = "Qwen2Tokenizer";
  j["pad_token"] = "<|endoftext|>";
  j["eos_token"] = "<|im_end|>";
  j["bos_token"] = nullptr;
  j["unk_token"] = nullptr;
  return j.dump(2) + "\n";
}

std::string z_image_model_index_json() {
  json j;
  j["_class_name"] = "ZImagePipeline";
  j["scheduler"] = {"diffusers", "FlowMatchEulerDiscreteScheduler"};
  j["text_encoder"] = {"transformers", "Qwen3Model"};
  j["tokenizer"] = {"transformers", "Qwen2Tokenizer"};
  j["transformer"] = {"diffusers", "ZImageTransformer2DModel"};
  j["vae"] = {"diffusers", "AutoencoderKL"};
  return j.dump(2) + "\n";
}

}  // namespace

PipelineSizes demo_pipeline_sizes() {
  PipelineSizes s;
  Qwen3Config& q = s.text_encoder;
  q.hidden_size = 128;
  q.intermediate_size = 256;
  q.num_hidden_layers = 2;
  q.num_attention_heads = 4;
  q.num_key_value_heads = 2;
  q.head_dim = 32;
  q.vocab_size = 512;
  s.transformer = demo_z_image_config();
  s.transformer.cap_feat_dim = q.hidden_size;
  s.vae = demo_vae_config();
  return s;
}

absl::Status write_random_pipeline(const PipelineSizes& sizes, const std::string& folder, uint64_t seed,
                                   const torch::Device& device) {
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/model_index.json", z_image_model_index_json()));
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/scheduler/scheduler_config.json",
                                             R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "shift": 3.0,)"
                                             R"( "use_dynamic_shifting": false, "num_train_timesteps": 1000})"
                                             "\n"));
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/tokenizer/tokenizer.json", tokenizer_json()));
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/tokenizer/tokenizer_config.json", tokenizer_config_json()));
  DIFFUSIOND_RETURN_IF_ERROR(write_text_file(folder + "/text_encoder/config.json", qwen3_config_json(sizes.text_encoder)));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_weights(folder + "/text_encoder/model.safetensors",
                                                  qwen3_parameter_table(sizes.text_encoder), seed, device));
  DIFFUSIOND_RETURN_IF_ERROR(write_random_z_image(sizes.transformer, folder + "/transformer", seed + 1, device));
  return write_random_vae(sizes.vae, folder + "/vae", seed + 2, device);
}

}  // namespace diffusiond
