#!/usr/bin/env bash
# Gathers what deploy/gpu-check.sh needs on a GPU machine that cannot fetch
# anything: Debian 12's packages for the libraries core/ links (Abseil, ICU,
# libpng, zlib, nlohmann-json; GoogleTest as source), a copy of the
# reference fixtures, and upstream diffusers' Python source for the side by
# side (only src/diffusers, as a 5 MiB tarball). Run on a Debian 12 machine
# with apt; writes the ignored folder .gpu-carry/ (about 30 MiB), which
# travels with the tree.
#
#   deploy/gpu-carry.sh [--diffusers CHECKOUT] [FIXTURES_DIR]
#       CHECKOUT: a diffusers checkout (holding src/diffusers) or its src/;
#       FIXTURES_DIR: default ../shared/fixtures
set -euo pipefail
diffusers=""
if [[ "${1:-}" == --diffusers ]]; then
  [[ -n "${2:-}" ]] || { echo "gpu-carry: --diffusers needs a folder" >&2; exit 2; }
  diffusers="$(cd "$2" && pwd)"
  shift 2
fi
cd "$(dirname "$0")/.."
fixtures="${1:-../shared/fixtures}"
out=.gpu-carry
mkdir -p "$out/debs"
packages=(libabsl-dev libabsl20220623 libicu-dev libicu72 libpng-dev libpng16-16 zlib1g zlib1g-dev
          nlohmann-json3-dev googletest libgtest-dev libgmock-dev libjemalloc-dev libjemalloc2)
(cd "$out/debs" && apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
for p in "${packages[@]}"; do
  ls "$out/debs/${p}_"*.deb >/dev/null 2>&1 || { echo "gpu-carry: ${p}.deb missing" >&2; exit 1; }
done
if [[ -d "$fixtures" ]]; then
  rm -rf "$out/fixtures"
  cp -r "$fixtures" "$out/fixtures"
else
  echo "gpu-carry: no fixtures at $fixtures; parity checks will skip" >&2
fi
if [[ -n "$diffusers" ]]; then
  [[ -d "$diffusers/src/diffusers" ]] && diffusers="$diffusers/src"
  if [[ ! -f "$diffusers/diffusers/__init__.py" ]]; then
    echo "gpu-carry: no diffusers/__init__.py under $diffusers" >&2
    exit 1
  fi
  # Python source only: caches and compiled files would only add bytes.
  tar -czf "$out/diffusers-src.tar.gz" -C "$diffusers" --exclude=__pycache__ --exclude='*.pyc' diffusers
  if [[ -d "$diffusers/../.git" ]]; then
    git -C "$diffusers/.." rev-parse HEAD >"$out/diffusers-commit.txt" 2>/dev/null || true
  fi
else
  echo "gpu-carry: no --diffusers: the side by side will run the port alone" >&2
fi
du -sh "$out"
