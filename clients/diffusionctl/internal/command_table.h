// The table of diffusionctl's commands and flags, with the builders that
// turn one command's arguments into its typed options. command_line.cc
// drives the parse and the help from it.
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_INTERNAL_COMMAND_TABLE_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_INTERNAL_COMMAND_TABLE_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "clients/diffusionctl/command_line.h"

namespace diffusiond::ctl::internal {

// What the generic pass collects for one command.
struct ParsedArgs {
  std::vector<std::string> args;
  std::map<std::string, std::string> flags;

  const std::string* flag(const std::string& name) const {
    auto it = flags.find(name);
    return it == flags.end() ? nullptr : &it->second;
  }
  bool has(const std::string& name) const { return flags.count(name) != 0; }
  // Every value of a repeatable flag, in order (the first is also in flags).
  std::map<std::string, std::vector<std::string>> repeats;
};

using Builder = std::function<absl::StatusOr<CommandOptions>(const ParsedArgs&)>;

struct FlagSpec {
  const char* name;
  const char* value;  // shown in the help; null for a switch
  const char* help;
  bool repeatable = false;  // may be given more than once (ParsedArgs::repeats)
};

// One command: its help, how many positional arguments it takes, its flags,
// and the builder that checks them and makes its options (INVALID_ARGUMENT
// naming the flag and value otherwise).
struct CommandSpec {
  const char* name;
  const char* args;  // shown in the help
  int min_args;
  int max_args;
  const char* summary;
  std::vector<FlagSpec> flags;
  Builder build;
};

// The PipelineService commands (pipeline_command_table.cc).
std::vector<CommandSpec> pipeline_commands();

// INVALID_ARGUMENT "FLAG: 'VALUE' is not EXPECTED".
absl::Status bad_value(absl::string_view flag, absl::string_view value, absl::string_view expected);
// Parses a finite number; bad_value naming `flag` otherwise.
absl::StatusOr<double> finite_number(absl::string_view flag, const std::string& text);
// The wire FP8 mode a flag's value names: default, off, e4m3fn or e5m2;
// bad_value naming `flag` otherwise.
absl::StatusOr<v1::Fp8Mode> fp8_mode(absl::string_view flag, const std::string& text);
// A compute dtype's name (float32, bfloat16, float16); bad_value otherwise.
absl::StatusOr<std::string> compute_dtype(absl::string_view flag, const std::string& text);

// Every --lora PATH[:WEIGHT] given, in order: the weight after the last
// colon when it parses as a finite number (a path may hold colons), else 1.
// bad_value for an empty path or more than 16 (the daemon's limit).
absl::StatusOr<std::vector<LoraOption>> lora_flags(const ParsedArgs& p);
// The --lora flag's help, shared by step, denoise and generate.
FlagSpec lora_flag();

// Every command, in the order the help lists them.
const std::vector<CommandSpec>& commands();
// Flags every command accepts.
const std::vector<FlagSpec>& global_flags();
// The command or flag called `name`, or null.
const CommandSpec* find_command(absl::string_view name);
const FlagSpec* find_flag(const std::vector<FlagSpec>& flags, absl::string_view name);

// Parses a duration in Abseil's syntax (30s, 1h30m) or plain seconds.
// INVALID_ARGUMENT naming `flag` unless it is positive and finite.
absl::StatusOr<absl::Duration> positive_duration(absl::string_view flag, const std::string& text);

}  // namespace diffusiond::ctl::internal

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_INTERNAL_COMMAND_TABLE_H_
