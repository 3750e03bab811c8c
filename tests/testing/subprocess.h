// Running a helper program in its own process, for tests that measure that
// process's memory.
#ifndef DIFFUSIOND_TESTS_TESTING_SUBPROCESS_H_
#define DIFFUSIOND_TESTS_TESTING_SUBPROCESS_H_

#include <cstdio>
#include <string>
#include <vector>

namespace diffusiond::testing {

struct CommandOutput {
  int exit_status = -1;            // as pclose returns it; 0 on success
  std::vector<std::string> lines;  // stdout, without newlines
};

// Runs `command` through the shell and collects its standard output.
inline CommandOutput run_command(const std::string& command) {
  CommandOutput out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::string line;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    line += buffer;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      out.lines.push_back(std::move(line));
      line.clear();
    }
  }
  if (!line.empty()) out.lines.push_back(std::move(line));
  out.exit_status = pclose(pipe);
  return out;
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_SUBPROCESS_H_
