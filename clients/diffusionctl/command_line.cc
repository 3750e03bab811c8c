#include "clients/diffusionctl/command_line.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "clients/diffusionctl/internal/command_table.h"

namespace diffusiond::ctl {
namespace {

using internal::commands;
using internal::CommandSpec;
using internal::find_command;
using internal::find_flag;
using internal::FlagSpec;
using internal::global_flags;
using internal::ParsedArgs;

constexpr size_t kHelpWidth = 80;

// `text` broken at spaces into lines of at most kHelpWidth columns; the
// first line continues after `first` (already `indent` wide), later lines
// start with `indent` spaces.
std::string wrap(absl::string_view first, size_t indent, absl::string_view text) {
  std::string out(first);
  size_t column = indent;
  bool line_empty = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line_empty && column + 1 + word.size() > kHelpWidth) {
      absl::StrAppend(&out, "\n", std::string(indent, ' '));
      column = indent;
      line_empty = true;
    }
    absl::StrAppend(&out, line_empty ? "" : " ", word);
    column += (line_empty ? 0 : 1) + word.size();
    line_empty = false;
  }
  return out + "\n";
}

std::string flag_line(const FlagSpec& f, size_t indent) {
  const std::string head =
      f.value == nullptr ? absl::StrCat("--", f.name) : absl::StrCat("--", f.name, " ", f.value);
  constexpr size_t kHeadWidth = 23;
  // A head as wide as its column puts its help on the next line.
  if (head.size() >= kHeadWidth) {
    return wrap(absl::StrCat(std::string(indent, ' '), head, "\n", std::string(indent + kHeadWidth, ' ')),
                indent + kHeadWidth, f.help);
  }
  return wrap(absl::StrFormat("%s%-23s", std::string(indent, ' '), head), indent + kHeadWidth, f.help);
}

std::string command_help(const CommandSpec& c) {
  std::string text = absl::StrCat("  ", c.name, *c.args ? " " : "", c.args, "\n");
  absl::StrAppend(&text, wrap("      ", 6, c.summary));
  for (const FlagSpec& f : c.flags) absl::StrAppend(&text, flag_line(f, 6));
  return text;
}

absl::Status apply_global(GlobalOptions& g, absl::string_view name, const std::string& value) {
  if (name == "address") {
    if (value.empty()) return absl::InvalidArgumentError("--address needs a HOST:PORT");
    g.address = value;
  } else if (name == "timeout") {
    absl::StatusOr<absl::Duration> d = internal::positive_duration("--timeout", value);
    if (!d.ok()) return d.status();
    g.timeout = *d;
  } else if (name == "json") {
    g.json = true;
  } else if (name == "tls_ca") {
    g.tls_ca = value;
  } else if (name == "tls_cert") {
    g.tls_cert = value;
  } else if (name == "tls_key") {
    g.tls_key = value;
  } else if (name == "token") {
    if (value.empty()) return absl::InvalidArgumentError("--token needs a TOKEN");
    g.token = value;
  } else if (name == "token_file") {
    g.token_file = value;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Invocation> parse_command_line(const std::vector<std::string>& args,
                                              const char* env_address) {
  Invocation inv;
  if (env_address != nullptr && *env_address != '\0') inv.global.address = env_address;
  const CommandSpec* command = nullptr;
  ParsedArgs parsed;
  std::map<std::string, bool> seen_global;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!flags_done && arg == "--") {
      flags_done = true;
      continue;
    }
    if (!flags_done && (arg == "-h" || arg == "--help")) {
      inv.help = true;
      continue;
    }
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      if (command == nullptr) {
        command = find_command(arg);
        if (command == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat("unknown command '", arg, "'"));
        }
      } else {
        parsed.args.push_back(arg);
      }
      continue;
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '", arg, "'"));
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const FlagSpec* spec = find_flag(global_flags(), name);
    const bool global = spec != nullptr;
    if (spec == nullptr && command != nullptr) spec = find_flag(command->flags, name);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '--", name, "'",
                       command == nullptr ? "" : absl::StrCat(" for ", command->name),
                       command == nullptr ? " (a command's flags come after it)" : ""));
    }
    std::string value = "true";
    if (spec->value == nullptr) {
      if (eq != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      }
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value (", spec->value, ")"));
    }
    if (!global && spec->repeatable) parsed.repeats[name].push_back(value);
    const bool repeated = global ? !seen_global.emplace(name, true).second
                                 : !parsed.flags.emplace(name, value).second && !spec->repeatable;
    if (repeated) return absl::InvalidArgumentError(absl::StrCat("--", name, " is given twice"));
    if (global) {
      if (absl::Status s = apply_global(inv.global, name, value); !s.ok()) return s;
    }
  }
  if (command == nullptr) {
    if (inv.help) return inv;
    return absl::InvalidArgumentError("no command given");
  }
  if (inv.help) {
    inv.help_command = command->name;
    return inv;
  }
  const int n = static_cast<int>(parsed.args.size());
  if (n < command->min_args || n > command->max_args) {
    return absl::InvalidArgumentError(
        absl::StrCat(command->name, " takes ", *command->args ? command->args : "no arguments",
                     ", got ", n, n == 1 ? " argument" : " arguments"));
  }
  absl::StatusOr<CommandOptions> options = command->build(parsed);
  if (!options.ok()) return options.status();
  inv.command = std::move(*options);
  return inv;
}

bool is_command(absl::string_view name) { return find_command(name) != nullptr; }

std::string help_text(absl::string_view command) {
  if (const CommandSpec* c = find_command(command)) {
    return absl::StrCat("Usage: diffusionctl [GLOBAL FLAGS] ", c->name, *c->args ? " " : "",
                        c->args, c->flags.empty() ? "" : " [FLAGS]", "\n\n", command_help(*c),
                        "\nRun 'diffusionctl --help' for the global flags.\n");
  }
  std::string text =
      "Usage: diffusionctl [GLOBAL FLAGS] COMMAND [ARGS] [FLAGS]\n"
      "\n"
      "A client of the diffusiond daemon. Flags take their value as --flag VALUE or\n"
      "--flag=VALUE; '--' ends the flags. Progress goes to stderr, results to stdout.\n"
      "\n"
      "Commands:\n";
  for (const CommandSpec& c : commands()) absl::StrAppend(&text, command_help(c));
  absl::StrAppend(&text, "\nGlobal flags (before or after the command):\n");
  for (const FlagSpec& f : global_flags()) absl::StrAppend(&text, flag_line(f, 2));
  absl::StrAppend(&text,
                  "\nExit status: 0 on success; 1 on an error, printed as\n"
                  "'diffusionctl: CODE: message' (CODE is the gRPC status); 2 on a usage error;\n"
                  "130 when Ctrl-C cancelled the call.\n");
  return text;
}

}  // namespace diffusiond::ctl
