#!/usr/bin/env bash
# Gathers what deploy/gpu-check.sh needs on a GPU machine that cannot fetch
# anything: Debian 12's packages for the libraries core/ links (Abseil, ICU,
# libpng, zlib, nlohmann-json; GoogleTest as source) and a copy of the
# reference fixtures. Run on a Debian 12 machine with apt; writes the
# ignored folder .gpu-carry/ (about 25 MiB), which travels with the tree.
#
#   deploy/gpu-carry.sh [FIXTURES_DIR]   (default: ../shared/fixtures)
set -euo pipefail
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
du -sh "$out"
