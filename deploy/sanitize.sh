#!/usr/bin/env bash
# Sanitizer runs of what CI's torch-free sanitizer jobs (run-tests.sh) do not
# reach, by hand; docs/reliability.md records their results.
#   bash deploy/sanitize.sh address   # ASan+UBSan daemon; the integration,
#                                     # stress and soak tests against it
#   bash deploy/sanitize.sh thread    # TSan engine-level tests with libtorch
#                                     # (engine, cache, vram, pipeline labels)
# Each builds into its own folder (build/asan-full, build/tsan-torch); a
# cold build takes 30-40 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/build-env.sh
bash deploy/install-deps.sh

case "${1:-}" in
  address)
    cmake -S . -B build/asan-full -G Ninja -DDIFFUSIOND_SANITIZER=address \
      -DDIFFUSIOND_BUILD_BENCHMARKS=OFF >/dev/null
    cmake --build build/asan-full --target diffusiond diffusionctl diffusiond-demo diffusiond_python_stubs
    # A small quarantine: the torture test runs the daemon near its budget.
    # RSS bounds are off under a sanitizer (tests/integration/daemon_fixture.py);
    # a leak at exit or any report fails the daemon's clean stop.
    ASAN_OPTIONS="detect_leaks=1:quarantine_size_mb=16" UBSAN_OPTIONS="print_stacktrace=1" \
      ctest --test-dir build/asan-full -L integration --output-on-failure --timeout 900
    ;;
  thread)
    cmake -S . -B build/tsan-torch -G Ninja -DDIFFUSIOND_SANITIZER=thread \
      -DDIFFUSIOND_BUILD_BENCHMARKS=OFF -DDIFFUSIOND_BUILD_SERVER=OFF >/dev/null
    cmake --build build/tsan-torch --target torch_tests
    # libtorch and its OpenMP runtime are not instrumented: TSan sees the
    # engine's threads and their locks, not races inside libtorch's kernels.
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      ctest --test-dir build/tsan-torch -L 'engine|cache|vram|pipeline' --output-on-failure --timeout 900
    ;;
  *)
    echo "usage: bash deploy/sanitize.sh address|thread" >&2
    exit 2
    ;;
esac
