#!/usr/bin/env bash
# Bounded fuzz run of one libFuzzer target (ASan + UBSan), tests/fuzz/:
#   bash deploy/fuzz.sh [TARGET] [SECONDS]   (default: checkpoint, 120 s)
#   bash deploy/fuzz.sh SECONDS              the checkpoint target, as before
# TARGET: checkpoint (safetensors headers, shard indexes), wire (request
# messages and the services' checks), config (config.json and
# scheduler_config.json along plan-config; builds the libtorch layers with
# clang, which takes a while the first time). FUZZ_FLAGS adds libFuzzer
# flags, e.g. FUZZ_FLAGS=-runs=10000000 (a run ends at whichever bound
# comes first); the run is niced.
# New interesting inputs go to build/fuzz/corpus/<TARGET>; crashes to
# build/fuzz/<TARGET>-crash-*. Copy a crash into tests/fuzz/corpus/<TARGET>/
# once fixed, so the replay test keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
target=checkpoint
if [[ $# -gt 0 && ! "$1" =~ ^[0-9]+$ ]]; then
  target="$1"
  shift
fi
seconds="${1:-120}"
case "$target" in
  checkpoint) flags=(-rss_limit_mb=2048) ;;
  # Long enough for names and paths past the 200 bytes errors quote.
  wire) flags=(-rss_limit_mb=2048 -max_len=8192) ;;
  # A legitimate config's tables take a few MiB; one allocation sized by a
  # declared count or width would take far more.
  config) flags=(-rss_limit_mb=2048 -malloc_limit_mb=64 -max_len=8192 -dict=../../tests/fuzz/config.dict) ;;
  *) echo "unknown fuzz target '$target': checkpoint, wire or config" >&2; exit 2 ;;
esac

source deploy/build-env.sh
bash deploy/install-deps.sh
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DDIFFUSIOND_BUILD_FUZZERS=ON \
  -DDIFFUSIOND_BUILD_BENCHMARKS=OFF -DDIFFUSIOND_BUILD_TESTS=ON >/dev/null
nice -n 5 cmake --build build/fuzz --target "${target}_fuzz"
mkdir -p "build/fuzz/corpus/$target"
cd build/fuzz
# shellcheck disable=SC2086  # FUZZ_FLAGS is a list of flags
nice -n 10 "./tests/fuzz/${target}_fuzz" -max_total_time="$seconds" -timeout=10 "${flags[@]}" \
  -artifact_prefix="${target}-" -print_final_stats=1 ${FUZZ_FLAGS:-} \
  "corpus/$target" "../../tests/fuzz/corpus/$target"
