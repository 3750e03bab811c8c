# Sourced by the deploy/run-*.sh scripts: shared build settings.
#
# ccache is keyed so that a fresh clone in another folder (CI) reuses the
# objects of an earlier build: paths are made relative to the checkout and
# the working directory is left out of the hash.
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
