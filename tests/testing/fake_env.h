// FakeEnv: a process environment for code that reads variables through a
// getenv-shaped function (daemon options, diffusionctl's token), so tests
// neither read nor change the real one.
#ifndef DIFFUSIOND_TESTS_TESTING_FAKE_ENV_H_
#define DIFFUSIOND_TESTS_TESTING_FAKE_ENV_H_

#include <functional>
#include <map>
#include <string>

namespace diffusiond::testing {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  // Valid while this FakeEnv lives; sees later changes to `vars`.
  std::function<const char*(const char*)> getenv() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_FAKE_ENV_H_
