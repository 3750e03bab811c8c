// TempDir: a fresh folder under the test's temporary directory, removed
// with its contents when the object goes.
#ifndef DIFFUSIOND_TESTS_TESTING_TEMP_DIR_H_
#define DIFFUSIOND_TESTS_TESTING_TEMP_DIR_H_

#include <ftw.h>
#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace diffusiond::testing {

// Removes `path` and everything under it; a missing path is not an error.
// Not std::filesystem::remove_all: the CUDA libtorch 2.x wheels export their
// own copy of it from libtorch.so, which wins symbol resolution and crashes
// (a null call) when it meets a non-empty folder.
inline void remove_tree(const std::string& path) {
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) {
        ::remove(p);
        return 0;  // keep going: remove what can be removed
      },
      16, FTW_DEPTH | FTW_PHYS);
}

class TempDir {
 public:
  TempDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            (std::string("diffusiond_") + (info != nullptr ? info->name() : "test") + "_" +
             std::to_string(::getpid()));
    remove_tree(path_.string());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { remove_tree(path_.string()); }

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
