#!/usr/bin/env bash
# Installs every Debian 12 package that building, testing and benchmarking
# diffusiond needs. Idempotent: when everything is present it returns at once
# without touching apt.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  clang libclang-rt-14-dev
  libtorch-dev libopenblas0-openmp libdnnl-dev
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev
  libabsl-dev prometheus-cpp-dev nlohmann-json3-dev libicu-dev libpng-dev
  libsentencepiece-dev libjemalloc-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev  # core/video: MP4 (H.264)
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-grpcio python3-protobuf python3-yaml prometheus
  mypy python3-setuptools python3-wheel python3-pip
  nginx  # integration.Routing: the model-affinity proxy (deploy/nginx)
  ffmpeg  # ffprobe: Mp4WriterTest reads the MP4s it writes
)

# Commands that deploy.KustomizeRender runs (render deploy/k8s, then validate it
# against the schemas pinned in deploy/k8s/schema): Debian's package only where
# no such command is on PATH, since another kubectl or node (a cloud SDK's,
# NodeSource's with its npm) serves as well and Debian's would clash with it.
# Debian's npm brings ~350 small packages; machines that have npm skip it.
COMMANDS=(kubectl:kubernetes-client node:nodejs npm:npm)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
for c in "${COMMANDS[@]}"; do
  command -v "${c%%:*}" >/dev/null || missing+=("${c#*:}")
done

select_blas() { bash "$(dirname "$0")/select-openmp-blas.sh"; }

if ((${#missing[@]} == 0)); then
  select_blas
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
select_blas
