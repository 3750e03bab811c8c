#!/usr/bin/env bash
# Makes every fixture variant in specs/ with the upstream generators of
# ../shared/refgen and runs the parity suites on them: each suite must pass
# unchanged on fixtures of the same layout as the shared ones, with the real
# configs' flags flipped (README.md beside this file lists what each varies).
#
#   tools/variants/run.sh DIFFUSERS_SRC TRANSFORMERS_SRC OUT [BUILD]
#
# DIFFUSERS_SRC and TRANSFORMERS_SRC are upstream source trees at the commits
# ../shared/refgen/README.md names (extracted from fetched snapshots; not
# vendored). OUT receives one fixture folder per spec and its generator's
# log. BUILD is a configured build folder (default build/release) whose
# torch_tests and core_tests are run with every DIFFUSIOND_<NAME>_FIXTURE
# pointing at the variants. Needs Debian's python3-torch (refgen/README.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
refgen="$repo/../shared/refgen"
[[ $# -ge 3 ]] || { sed -n 2,15p "$0"; exit 2; }
diffusers="$(cd "$1" && pwd)" transformers="$(cd "$2" && pwd)"
mkdir -p "$3"
out="$(cd "$3" && pwd)"
build="${4:-$repo/build/release}"
diffusers_commit=58eb52c0803ea9af3abec60841c2a093bdf1f951
transformers_commit=753d61104116eefc8ffc977327b441ee0c8d599f

for fam in ZIMAGE FLUX QWENIMAGE WAN KREA2 VAE VIDEO_VAE QWEN3 CLIPREF T5REF ANIMA; do
  export "${fam}_DIFFUSERS_SRC=$diffusers" "${fam}_DIFFUSERS_COMMIT=$diffusers_commit"
done
for fam in QWEN3 CLIPREF T5REF QWENVL; do
  export "${fam}_TRANSFORMERS_SRC=$transformers" "${fam}_TRANSFORMERS_COMMIT=$transformers_commit"
done
export QWENVL_DIFFUSERS_SRC="$diffusers" QWENVL_DIFFUSERS_COMMIT="$diffusers_commit"

# spec name prefix -> generator
generator() {
  case "$1" in
    wan-vae-* | qwenimage-vae-*) echo video_vae_refgen.py ;;
    zimage-*) echo zimage_refgen.py ;;
    flux-*) echo flux_refgen.py ;;
    qwenimage-*) echo qwenimage_refgen.py ;;
    wan-* | wan22-*) echo wan_refgen.py ;;
    krea2-*) echo krea2_refgen.py ;;
    anima-*) echo anima_refgen.py ;;
    qwen25vl-* | qwen3vl-*) echo qwenvl_refgen.py ;;
    vae-*) echo vae_refgen.py ;;
    qwen3-*) echo qwen3_refgen.py ;;
    clip-*) echo clip_refgen.py ;;
    t5-* | umt5-*) echo t5_refgen.py ;;
    *) echo "no generator for $1" >&2; return 1 ;;
  esac
}

for spec in "$here"/specs/*.json; do
  name="$(basename "$spec" .json)"
  echo "== $name"
  (cd "$refgen" && /usr/bin/python3 "$(generator "$name")" --spec "$spec" --out "$out/$name") \
    >"$out/$name.log" 2>&1 || { echo "generator failed: $out/$name.log" >&2; exit 1; }
done
# The Qwen3 generator does not copy its chat template; the layout has one.
cp -n "$repo/../shared/fixtures/qwen3-tiny/qwen3_chat_template.jinja" "$out/qwen3-tiny-w48h3/" 2>/dev/null || true

export DIFFUSIOND_WAN22_FIXTURE="$out/wan22-tiny-a14b" DIFFUSIOND_WAN_FIXTURE="$out/wan-tiny-shift5" \
  DIFFUSIOND_QWENIMAGE_FIXTURE="$out/qwenimage-tiny-lightning" DIFFUSIOND_ZIMAGE_FIXTURE="$out/zimage-tiny-h3w60" \
  DIFFUSIOND_FLUX_FIXTURE="$out/flux-tiny-schnell" DIFFUSIOND_KREA2_FIXTURE="$out/krea2-tiny-distilled" \
  DIFFUSIOND_CLIP_FIXTURE="$out/clip-tiny-w48h3" DIFFUSIOND_QWEN3_FIXTURE="$out/qwen3-tiny-w48h3" \
  DIFFUSIOND_T5_FIXTURE="$out/t5-tiny-w48h3" DIFFUSIOND_UMT5_FIXTURE="$out/umt5-tiny-w40h5" \
  DIFFUSIOND_VAE_FIXTURE="$out/vae-tiny-c12l2" \
  DIFFUSIOND_WAN_VAE_FIXTURE="$out/wan-vae-tiny-b" DIFFUSIOND_QWENIMAGE_VAE_FIXTURE="$out/qwenimage-vae-tiny-b" \
  DIFFUSIOND_QWEN25VL_FIXTURE="$out/qwen25vl-tiny-w40h5-tied" DIFFUSIOND_QWEN3VL_FIXTURE="$out/qwen3vl-tiny-bias-final-norm" \
  DIFFUSIOND_ANIMA_FIXTURE="$out/anima-tiny-b-h3w72-layernorm"
"$build/tests/unit/torch_tests" --gtest_brief=1
"$build/tests/unit/core_tests" --gtest_brief=1
# The causal VAEs, the Qwen-VL towers and Anima have a second variant each: their suites again.
DIFFUSIOND_WAN_VAE_FIXTURE="$out/wan-vae-tiny-c" DIFFUSIOND_QWENIMAGE_VAE_FIXTURE="$out/qwenimage-vae-tiny-c" \
  "$build/tests/unit/torch_tests" --gtest_brief=1 --gtest_filter='WanVaeParity.*:QwenImageVaeParity.*'
DIFFUSIOND_QWEN25VL_FIXTURE="$out/qwen25vl-tiny-w48h4" DIFFUSIOND_QWEN3VL_FIXTURE="$out/qwen3vl-tiny-w36h6" \
  "$build/tests/unit/torch_tests" --gtest_brief=1 \
  --gtest_filter='*Qwen25VlParity*:*Qwen3VlParity*:QwenVlEncodePrompt.*:QwenImagePromptTest.*'
DIFFUSIOND_ANIMA_FIXTURE="$out/anima-tiny-c-nonsquare" \
  "$build/tests/unit/torch_tests" --gtest_brief=1 --gtest_filter='Anima*'
