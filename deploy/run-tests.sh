#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite:
#   1. ThreadSanitizer and AddressSanitizer+UBSan builds of the torch-free
#      core (memory, cache, checkpoint parsing) and their tests, the
#      concurrency stress test and the fuzz corpus replay among them;
#   2. the full build and every test.
# Output ends with ctest's summary line for the full suite. Exit status is
# non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/build-env.sh

bash deploy/install-deps.sh

echo "== ThreadSanitizer build of the torch-free core"
CC=clang CXX=clang++ cmake -S . -B build/tsan -G Ninja \
  -DDIFFUSIOND_WITH_TORCH=OFF -DDIFFUSIOND_BUILD_SERVER=OFF \
  -DDIFFUSIOND_BUILD_BENCHMARKS=OFF -DDIFFUSIOND_SANITIZER=thread >/dev/null
cmake --build build/tsan
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build/tsan --output-on-failure

echo "== AddressSanitizer + UBSan build of the torch-free core"
CC=clang CXX=clang++ cmake -S . -B build/asan -G Ninja \
  -DDIFFUSIOND_WITH_TORCH=OFF -DDIFFUSIOND_BUILD_SERVER=OFF \
  -DDIFFUSIOND_BUILD_BENCHMARKS=OFF -DDIFFUSIOND_SANITIZER=address >/dev/null
cmake --build build/asan
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
  ctest --test-dir build/asan --output-on-failure -j2

echo "== Full build and test suite"
cmake -S . -B build/release -G Ninja >/dev/null
cmake --build build/release
ctest --test-dir build/release --output-on-failure -j2 2>&1 | tee build/release/ctest.log
# ctest prints skipped tests and timings after its summary; repeat the
# summary so it is the last line.
grep -E "tests passed, [0-9]+ tests? failed out of" build/release/ctest.log | tail -1
