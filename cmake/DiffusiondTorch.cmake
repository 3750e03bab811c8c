# Finds libtorch and decides whether the CUDA kernels are built.
# Debian 12 ships libtorch 1.13 (CPU); the GPU build uses a CUDA libtorch 2.x.

find_package(Torch REQUIRED)
# TorchConfig appends its flags to CMAKE_CXX_FLAGS; keep them on the target
# (INTERFACE_COMPILE_OPTIONS of `torch`) instead so pure-C++ targets stay clean.
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

if(DIFFUSIOND_HAVE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  enable_language(CUDA)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
endif()
message(STATUS "diffusiond: Torch ${Torch_VERSION}, CUDA kernels: ${DIFFUSIOND_HAVE_CUDA}")
