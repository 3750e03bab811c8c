#!/usr/bin/env bash
# Bounded fuzz run of the checkpoint parsers (libFuzzer + ASan/UBSan).
#   bash deploy/fuzz.sh [SECONDS]   (default 120)
# New interesting inputs go to build/fuzz/corpus; crashes to build/fuzz/.
# Copy a crash into tests/fuzz/corpus/ once fixed, so the replay test keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/build-env.sh
bash deploy/install-deps.sh
seconds="${1:-120}"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DDIFFUSIOND_BUILD_FUZZERS=ON \
  -DDIFFUSIOND_WITH_TORCH=OFF -DDIFFUSIOND_BUILD_SERVER=OFF -DDIFFUSIOND_BUILD_BENCHMARKS=OFF \
  -DDIFFUSIOND_BUILD_TESTS=ON >/dev/null
cmake --build build/fuzz --target checkpoint_fuzz
mkdir -p build/fuzz/corpus
cd build/fuzz
./tests/fuzz/checkpoint_fuzz -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 corpus ../../tests/fuzz/corpus
