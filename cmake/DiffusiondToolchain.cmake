# Compiler settings shared by every target: standard, warnings, ccache and the
# sanitizer builds.

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
# -fPIC for libraries and executables alike (executables still link as
# PIE): one libtorch precompiled header serves both only when they agree,
# and CMake's per-type flags would give executables -fPIE.
# -pthread likewise: GoogleTest's targets add it (it defines _REENTRANT),
# and a precompiled header is refused where such a macro differs.
add_compile_options(-fPIC -pthread)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()
# Invariants are asserted (STYLE: a broken invariant is a bug); the checks
# are cheap next to tensor work, so optimised builds keep them. -g1 keeps
# function names and line tables (backtraces, perf) without the type
# information of every libtorch template, which made a third of each
# libtorch translation unit's compile time (docs/building.md).
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O2 -g1")
set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O2 -g1")

# Unity builds: the targets with many translation units compile them in
# batches of eight, one compiler run per batch. Each libtorch translation
# unit pays about 2.5 s before its first line (loading the 370 MB
# precompiled header) and then instantiates and emits the same tensor,
# Abseil and GoogleTest templates as its neighbours; a batch pays both once.
# It is ON everywhere, so a name that two files of a batch both define
# (file-local helpers too: an anonymous namespace spans the batch) fails
# every build, not only CI's. OFF for editing one file and rebuilding it
# alone (docs/building.md).
option(DIFFUSIOND_UNITY_BUILD "Compile large targets in unity batches" ON)
function(diffusiond_unity_build)
  if(DIFFUSIOND_UNITY_BUILD)
    set_target_properties(${ARGN} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_C_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
endif()

# Debian's Abseil 20220623 marks Status [[nodiscard]]; an ignored Status is a
# dropped error, so it is an error here. A switch over an enum that misses
# an enumerator is one too: the name tables and dtype mappings rely on it.
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wno-unused-parameter;-Werror=unused-result;-Werror=switch>")
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wthread-safety;-Werror=thread-safety-analysis>")
endif()

if(NOT DIFFUSIOND_SANITIZER STREQUAL "")
  # Lets RSS-measuring tests skip: sanitizer allocators quarantine frees.
  add_compile_definitions(DIFFUSIOND_SANITIZER_BUILD)
endif()
if(DIFFUSIOND_SANITIZER STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(DIFFUSIOND_SANITIZER STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT DIFFUSIOND_SANITIZER STREQUAL "")
  message(FATAL_ERROR "DIFFUSIOND_SANITIZER must be empty, 'address' or 'thread', got '${DIFFUSIOND_SANITIZER}'")
endif()

if(DIFFUSIOND_BUILD_FUZZERS)
  # Coverage instrumentation for every library the fuzz targets reach.
  # Undefined behaviour stops the run, as in the ASan build: a report the
  # fuzzer prints and passes over is a finding nobody keeps.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
