#!/usr/bin/env bash
# Installs what is missing, builds, and runs the project's main job.
#
# Today that is diffusiond-cache-demo: the memory-budget core (Budget,
# Reservation, ModelCache) serving stand-in models made of libtorch tensors
# under a 1 GiB budget, with the process's real RSS printed at each step.
# Extra arguments go to the demo (--budget_mib N, --model_mib N).
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/build-env.sh

bash deploy/install-deps.sh
cmake -S . -B build/release -G Ninja >/dev/null
cmake --build build/release --target diffusiond-cache-demo
exec build/release/server/diffusiond-cache-demo "$@"
