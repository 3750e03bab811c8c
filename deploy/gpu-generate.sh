#!/usr/bin/env bash
# The whole pipeline on the device at its real size (docs/gpu.md, "A real-size
# Generate"): writes a Z-Image-Turbo pipeline of random bf16 weights drawn on
# the GPU (Qwen3-4B, the 6 B transformer and the VAE from docs/configs, about
# 20 GB), then runs one 1024x1024 Generate through the engine as the daemon's
# Generate does, and reports the seconds of each stage (loads, encode, every
# denoise step, decode), where each ran, and the peak device memory against
# the VRAM budget. Run it right after deploy/gpu-check.sh, whose build it
# uses (it builds port_forward_cli alone when that is missing). Budget: under
# 5 minutes on one H200; the pipeline is deleted at the end.
#
#   deploy/gpu-generate.sh [--dry-run] [--out DIR] [--build DIR]
#
#   --dry-run    no GPU: the demo pipeline, 256x256 in 2 steps, on the
#                simulated device
#   --out DIR    where the results go (default: $OUT if set, else
#                build/gpu-generate): generate.log, generate.json (the run's
#                report) and summary.txt
#   --build DIR  the build folder (default build/gpu, gpu-check.sh's)
#
# Exit 0 when the Generate ran and the device held at most the budget + 1 GiB;
# 1 otherwise; 2 for a bad command line.
set -euo pipefail

usage() {
  echo "usage: deploy/gpu-generate.sh [--dry-run] [--out DIR] [--build DIR]"
}

dry_run=0
out="${OUT:-build/gpu-generate}"
build=build/gpu
while (($#)); do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --out|--build)
      if (($# < 2)) || [[ -z "$2" ]]; then
        echo "gpu-generate: $1 needs a folder" >&2; usage >&2; exit 2
      fi
      if [[ "$1" == --out ]]; then out="$2"; else build="$2"; fi
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-generate: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

cd "$(dirname "$0")/.."
source deploy/build-env.sh
mkdir -p "$out"
out="$(cd "$out" && pwd)"
: >"$out/summary.txt"
rm -f "$out/generate.json"
pipeline="$build/generate-pipeline"
exec > >(tee "$out/generate.log") 2>&1
tee_pid=$!
# The pipeline goes with the script, whatever ends it; tee writes the last lines.
trap 'rm -rf "$pipeline"; exec >&- 2>&-; wait "$tee_pid" 2>/dev/null || true' EXIT

deadline=$((SECONDS + (dry_run ? 1800 : 290)))
failed=0
record() {
  printf '%-16s %-5s %s\n' "$1" "$2" "$3" | tee -a "$out/summary.txt"
  if [[ "$2" == FAIL ]]; then failed=1; fi
}
# Runs `"$@"` as step $1 within what is left of the budget.
step() {
  local name=$1 start=$SECONDS status=0 limit_s=$((deadline - SECONDS))
  shift
  if ((limit_s < 10)); then
    record "$name" FAIL "not run: the budget is spent"
    return 1
  fi
  echo "== $name (at most ${limit_s} s): $*"
  timeout --kill-after=10 "$limit_s" "$@" || status=$?
  if ((status == 0)); then
    record "$name" PASS "$((SECONDS - start)) s"
  else
    record "$name" FAIL "exit $status after $((SECONDS - start)) s"
    return 1
  fi
}

cli="$build/tests/bench/port_forward_cli"
if [[ ! -x "$cli" ]]; then
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    record build FAIL "no build in $build: run deploy/gpu-check.sh first"
    exit 1
  fi
  step build cmake --build "$build" --target port_forward_cli || exit 1
fi

rm -rf "$pipeline"
if ((dry_run)); then
  write=("$cli" write-pipeline "$pipeline")
  run=("$cli" generate "$pipeline" --device sim --dtype bfloat16 --width 256 --height 256 --steps 2 --threads "$(nproc)")
else
  write=("$cli" write-pipeline "$pipeline" --configs docs/configs/z-image-turbo --device cuda:0)
  run=("$cli" generate "$pipeline" --device cuda:0 --dtype bfloat16 --width 1024 --height 1024 --steps 8
       --threads "$(nproc)")
fi
step "write pipeline" "${write[@]}" || exit 1
du -sh "$pipeline" || true
step generate bash -c '"$@" >"'"$out"'/generate.json"' _ "${run[@]}" || exit 1

# The stages and the device memory against the budget, from the report.
python3 - "$out/generate.json" <<'EOF' | tee -a "$out/summary.txt" || failed=1
import json, sys
r = json.load(open(sys.argv[1]))
gib = 1 << 30
print(f"generate {r['width']}x{r['height']}, {r['steps']} steps, {r['dtype']} on {r['device']}: {r['seconds']:.2f} s")
for s in r["stages"]:
    what = s["stage"] + (f" {s['step']}" if "step" in s else "")
    print(f"  {what:<12} {s['model']:<40} {s['seconds']:8.3f} s  {s['device'] or '-'}")
budget, peak = r["vram_budget_bytes"], r.get("device_peak_used_bytes", 0)
print(f"  device peak {peak / gib:.2f} GiB against a budget of {budget / gib:.2f} GiB "
      f"(books {r.get('vram_books_high_water_bytes', 0) / gib:.2f} GiB, "
      f"allocator {r.get('allocator_peak_reserved_bytes', 0) / gib:.2f} GiB)")
stages_on_device = {s["stage"] for s in r["stages"] if s["device"] and s["device"] != "cpu"}
missing = {"encode", "denoise", "decode"} - stages_on_device
if missing:
    print(f"FAIL: {', '.join(sorted(missing))} did not run on the device")
    sys.exit(1)
if peak > budget + gib:
    print("FAIL: the device held more than the budget + 1 GiB")
    sys.exit(1)
EOF

if ((failed)); then
  record result FAIL "see generate.log"
  exit 1
fi
record result PASS "$SECONDS s"
