// Removing a folder and everything under it.
#ifndef DIFFUSIOND_CORE_UTIL_REMOVE_TREE_H_
#define DIFFUSIOND_CORE_UTIL_REMOVE_TREE_H_

#include <string>

namespace diffusiond {

// Removes `path` and everything under it, without following links; a
// missing path is not an error, and what cannot be removed is left.
// Not std::filesystem::remove_all: the CUDA libtorch 2.x wheels export their
// own copy of it from libtorch.so, which wins symbol resolution in programs
// that link libtorch and crashes (a null call) on a non-empty folder.
void remove_tree(const std::string& path);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_UTIL_REMOVE_TREE_H_
