#!/usr/bin/env bash
# Makes OpenBLAS's OpenMP build the system's libblas.so.3, liblapack.so.3 and
# libopenblas.so.0 (libtorch links the first two, and they load the third).
#
# Debian ranks the pthreads build higher, so it wins whenever both are
# installed. That build keeps a pool of its own beside libtorch's OpenMP
# pool; on a 2-core machine the two pools spin against each other between
# a matmul and the element-wise work after it, and a 2-thread Z-Image step
# took 6.7 s instead of 4.4 s (docs/benchmarks.md). The OpenMP build runs
# its matmuls on libtorch's pool. Idempotent; needs root to change anything.
set -euo pipefail
shopt -s nullglob
for want in /usr/lib/*/openblas-openmp/libblas.so.3 /usr/lib/*/openblas-openmp/liblapack.so.3 \
            /usr/lib/*/openblas-openmp/libopenblas.so.0; do
  lib=$(basename "$want")
  dir=$(dirname "$(dirname "$want")")  # /usr/lib/<multiarch>
  arch=$(basename "$dir")
  current=$(readlink -f "$dir/$lib" 2>/dev/null || true)
  if [[ $current != "$(readlink -f "$want")" ]]; then
    if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
    $SUDO update-alternatives --quiet --set "$lib-$arch" "$want"
  fi
done
