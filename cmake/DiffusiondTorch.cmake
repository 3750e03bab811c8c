# Finds libtorch and decides what CUDA code is built.
# Debian 12 ships libtorch 1.13 (CPU); the GPU build uses a CUDA libtorch 2.x.
#
#   DIFFUSIOND_HAVE_CUDA          the Torch found has CUDA: CUDA kernels are
#                                 linked and dispatched to
#   DIFFUSIOND_BUILD_CUDA_KERNELS the .cu sources are compiled: whenever CUDA
#                                 is on, and in CPU builds when nvcc exists,
#                                 so CI checks they compile

find_package(Torch REQUIRED)
# TorchConfig appends its flags to CMAKE_CXX_FLAGS; they are already on the
# `torch` target's INTERFACE_COMPILE_OPTIONS, so keep pure-C++ targets clean.
string(REPLACE "${TORCH_CXX_FLAGS}" "" CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS}")

if(TORCH_CUDA_LIBRARIES)
  set(_torch_has_cuda ON)
else()
  set(_torch_has_cuda OFF)
endif()

if(DIFFUSIOND_CUDA STREQUAL "AUTO")
  set(DIFFUSIOND_HAVE_CUDA ${_torch_has_cuda})
elseif(DIFFUSIOND_CUDA)
  set(DIFFUSIOND_HAVE_CUDA ON)
else()
  set(DIFFUSIOND_HAVE_CUDA OFF)
endif()

if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
if(DIFFUSIOND_HAVE_CUDA OR (NOT DIFFUSIOND_CUDA STREQUAL "OFF" AND CMAKE_CUDA_COMPILER
                            AND NOT DIFFUSIOND_SANITIZER))
  set(DIFFUSIOND_BUILD_CUDA_KERNELS ON)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  set(CMAKE_CUDA_STANDARD 17)
  enable_language(CUDA)
else()
  set(DIFFUSIOND_BUILD_CUDA_KERNELS OFF)
endif()
# One precompiled header for every target that includes libtorch: parsing
# <torch/types.h> costs ~7 s per translation unit on the development
# machine, loading it precompiled ~0.3 s. The donor target compiles it once;
# diffusiond_use_torch_pch() makes another target reuse it. Reuse needs the
# same compile flags, which every libtorch target here has (torch's own
# interface flags, the project's); a source with its own flags opts out
# with SKIP_PRECOMPILE_HEADERS. GCC ignores (and -Winvalid-pch reports) a
# header it cannot use, so a mismatch costs time, never correctness.
option(DIFFUSIOND_TORCH_PCH "Precompile the libtorch headers once for all targets" ON)
add_library(diffusiond_torch_pch STATIC "${PROJECT_SOURCE_DIR}/cmake/torch_pch.cc")
target_link_libraries(diffusiond_torch_pch PUBLIC torch)
if(DIFFUSIOND_TORCH_PCH)
  target_precompile_headers(diffusiond_torch_pch PRIVATE <torch/types.h> <torch/utils.h>)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Winvalid-pch>")
  if(CCACHE_PROGRAM AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # Lets ccache cache translation units that use the header (it then
    # hashes the .gch; deploy/build-env.sh sets the sloppiness it needs).
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fpch-preprocess>")
  endif()
endif()

function(diffusiond_use_torch_pch)
  if(DIFFUSIOND_TORCH_PCH)
    foreach(target IN LISTS ARGN)
      target_precompile_headers(${target} REUSE_FROM diffusiond_torch_pch)
    endforeach()
  endif()
endfunction()

message(STATUS "diffusiond: Torch ${Torch_VERSION}; CUDA dispatch: ${DIFFUSIOND_HAVE_CUDA}; "
               "CUDA kernels compiled: ${DIFFUSIOND_BUILD_CUDA_KERNELS}")
