// The role each gRPC method needs: one table, keyed by the full method
// path as it arrives on the wire ("/diffusiond.v1.ModelService/LoadModel").
// A new RPC is one line there. A method missing from it is refused to
// every caller (fail closed), and a unit test checks that every method of
// every service the daemon serves has its line.
//
// Not here: callers' roles (access_table.h), the check (authorizer.h).
#ifndef DIFFUSIOND_SERVER_METHOD_ROLES_H_
#define DIFFUSIOND_SERVER_METHOD_ROLES_H_

#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/access_table.h"

namespace diffusiond {

// What calling a method takes: nothing (open to anyone, health for the
// kubelet), or a role.
struct MethodRule {
  absl::string_view path;  // "/package.Service/Method"
  bool open;               // no credentials asked
  Role role;               // the least role that may call it, unless open
};

// Every rule, for docs and tests.
const std::vector<MethodRule>& method_rules();

// The rule for `path`, or empty for a method the table does not list.
std::optional<MethodRule> method_rule(absl::string_view path);

}  // namespace diffusiond

#endif  // DIFFUSIOND_SERVER_METHOD_ROLES_H_
