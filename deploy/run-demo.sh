#!/usr/bin/env bash
# Installs what is missing, builds, and runs the project's main job:
# diffusiond-demo generates a small Z-Image-architecture model (random
# weights, real diffusers file format) in build/demo-model if absent, loads
# it through the cache under the RAM budget with FP8 storage, and denoises a
# 512x512 latent with guidance, showing per-step progress. Extra arguments
# go to the demo (see --help in server/demo_main.cc: --steps, --size, --seed,
# --guidance, --fp8, --model_dir to point at real Z-Image weights).
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/build-env.sh

bash deploy/install-deps.sh
cmake -S . -B build/release -G Ninja >/dev/null
cmake --build build/release --target diffusiond-demo
exec build/release/server/diffusiond-demo --model_dir build/demo-model \
  --out build/demo-latents.safetensors "$@"
