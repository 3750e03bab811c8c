// TempDir: a fresh folder under the test's temporary directory, removed
// with its contents when the object goes.
#ifndef DIFFUSIOND_TESTS_TESTING_TEMP_DIR_H_
#define DIFFUSIOND_TESTS_TESTING_TEMP_DIR_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/util/remove_tree.h"
#include "gtest/gtest.h"

namespace diffusiond::testing {

class TempDir {
 public:
  TempDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            (std::string("diffusiond_") + (info != nullptr ? info->name() : "test") + "_" +
             std::to_string(::getpid()));
    ::diffusiond::remove_tree(path_.string());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { ::diffusiond::remove_tree(path_.string()); }

  std::string path(const std::string& relative = "") const {
    return relative.empty() ? path_.string() : (path_ / relative).string();
  }
  // Writes `bytes` to path(relative), creating folders, and returns the path.
  std::string write(const std::string& relative, const std::string& bytes) const {
    const std::filesystem::path p = path_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_TEMP_DIR_H_
