// The translation unit that builds the precompiled libtorch headers
// (cmake/DiffusiondTorch.cmake); it defines nothing.
