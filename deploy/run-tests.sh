#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite:
#   1. a ThreadSanitizer build of the torch-free core (memory, cache) and its
#      tests, the concurrency stress test among them;
#   2. the full build and every test.
# Output ends with ctest's summary line for the full suite. Exit status is
# non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/build-env.sh

bash deploy/install-deps.sh

echo "== ThreadSanitizer build of core/memory and core/cache"
CC=clang CXX=clang++ cmake -S . -B build/tsan -G Ninja \
  -DDIFFUSIOND_WITH_TORCH=OFF -DDIFFUSIOND_BUILD_SERVER=OFF \
  -DDIFFUSIOND_BUILD_BENCHMARKS=OFF -DDIFFUSIOND_SANITIZER=thread >/dev/null
cmake --build build/tsan
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build/tsan --output-on-failure

echo "== Full build and test suite"
cmake -S . -B build/release -G Ninja >/dev/null
cmake --build build/release
ctest --test-dir build/release --output-on-failure -j2
