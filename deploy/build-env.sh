# Sourced by the deploy/run-*.sh scripts: shared build settings.
#
# ccache is keyed so that a fresh clone in another folder (CI) reuses the
# objects of an earlier build: paths are made relative to the checkout and
# the working directory is left out of the hash.
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# The precompiled libtorch header (cmake/DiffusiondTorch.cmake): ccache hashes
# the .gch itself, so its timestamps and the macros it defines need not be.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
