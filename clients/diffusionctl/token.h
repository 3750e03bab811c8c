// The bearer token diffusionctl sends (`authorization: Bearer TOKEN`), from
// the first of: --token, --token_file, $DIFFUSIOND_TOKEN,
// $DIFFUSIOND_TOKEN_FILE. None of them: no token, for a daemon without
// --auth_token_file.
#ifndef DIFFUSIOND_CLIENTS_DIFFUSIONCTL_TOKEN_H_
#define DIFFUSIOND_CLIENTS_DIFFUSIONCTL_TOKEN_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "clients/diffusionctl/command_line.h"

namespace diffusiond::ctl {

// Returns the token, or "" for none. A file's surrounding whitespace (its
// final newline) is dropped. NOT_FOUND / FAILED_PRECONDITION naming the
// flag or variable and the file when it cannot be read; INVALID_ARGUMENT
// when it holds no token or one with spaces inside. `getenv` reads the
// environment (std::getenv in main).
absl::StatusOr<std::string> resolve_token(const GlobalOptions& options,
                                          const std::function<const char*(const char*)>& getenv);

}  // namespace diffusiond::ctl

#endif  // DIFFUSIOND_CLIENTS_DIFFUSIONCTL_TOKEN_H_
