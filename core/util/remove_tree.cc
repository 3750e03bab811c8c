#include "core/util/remove_tree.h"

#include <ftw.h>
#include <stdio.h>

namespace diffusiond {

void remove_tree(const std::string& path) {
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) {
        ::remove(p);
        return 0;  // keep going: remove what can be removed
      },
      16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace diffusiond
