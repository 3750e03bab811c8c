#!/usr/bin/env bash
# The prepared check of a GPU machine (docs/gpu.md, "The prepared device
# check"), run once per machine: builds the tests and gpu_bench against the
# machine's CUDA libtorch (python's torch) and the Debian packages carried in
# .gpu-carry/ (deploy/gpu-carry.sh), runs four test selections — FP8 kernels,
# Z-Image parity, VRAM tiers, other CUDA tests — then gpu_bench, then the side
# by side against upstream diffusers (tests/bench/vs_upstream.py: real-size
# Z-Image and real-width FLUX, bf16, batch 1 and 2, the port's FP8 and
# half-resident variants, device memory sampled against the VRAM budget,
# and a profiled Z-Image step of the port and its FP8 variant).
# Budget: under 8 minutes on one H200 with 16 cores; every step is cut at a
# shared deadline.
#
#   deploy/gpu-check.sh [--dry-run] [--out DIR] [--build DIR] [--diffusers SRC]
#
#   --dry-run    run what needs no GPU, on a machine without one: Debian's
#                libtorch when python has no torch, the system's packages
#                where it has them; CUDA tests skip, gpu_bench runs small,
#                the side by side runs at the demo size on the CPU (the port
#                on the simulated device) against upstream on the first
#                Python that has torch
#   --out DIR    where the results go (default: $OUT if set, else
#                build/gpu-check): gpu-check.log (everything), ctest.log (the
#                selections), gpu-bench.json, side-by-side.json and .md, and
#                summary.txt (one line a step)
#   --build DIR  the build folder (default build/gpu); reruns are incremental
#   --diffusers SRC  upstream's source (the folder holding diffusers/); default:
#                the one carried in .gpu-carry/diffusers-src.tar.gz
#
# Exit 0 when every step passed; 1 when one failed (the later steps still
# run); 2 for a bad command line.
set -euo pipefail

usage() {
  echo "usage: deploy/gpu-check.sh [--dry-run] [--out DIR] [--build DIR] [--diffusers SRC]"
}

dry_run=0
out="${OUT:-build/gpu-check}"
build=build/gpu
diffusers=""
while (($#)); do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --out|--build|--diffusers)
      if (($# < 2)) || [[ -z "$2" ]]; then
        echo "gpu-check: $1 needs a folder" >&2; usage >&2; exit 2
      fi
      case "$1" in
        --out) out="$2" ;;
        --build) build="$2" ;;
        *) diffusers="$(cd "$2" && pwd)" || { echo "gpu-check: no folder $2" >&2; exit 2; } ;;
      esac
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-check: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

cd "$(dirname "$0")/.."
source deploy/build-env.sh
mkdir -p "$out" "$build"
out="$(cd "$out" && pwd)"
build="$(cd "$build" && pwd)"
: >"$out/ctest.log"
: >"$out/summary.txt"
rm -f "$out/gpu-bench.json" "$out/side-by-side.json" "$out/side-by-side.md"
exec > >(tee "$out/gpu-check.log") 2>&1
tee_pid=$!
# Lets tee write the last lines before the script is gone.
trap 'exec >&- 2>&-; wait "$tee_pid" 2>/dev/null || true' EXIT

# Every step gets at most what is left of the budget, so the whole run ends
# in time even when one step hangs; a step with too little left is not run.
# A dry run builds on whatever machine it is given (2 cores, cold ccache), so
# only hangs bound it.
budget_s=470
build_cap_s=240
if ((dry_run)); then
  budget_s=3600
  build_cap_s=3000
fi
deadline=$((SECONDS + budget_s))
failed=0

left_s() { echo $((deadline - SECONDS)); }

# Records one summary line: step, PASS/FAIL/SKIP, details.
record() {
  printf '%-22s %-5s %s\n' "$1" "$2" "$3" | tee -a "$out/summary.txt"
  if [[ "$2" == FAIL ]]; then failed=1; fi
}

# Runs `"$@"` under the deadline (at most $1 seconds); records the step.
step() {
  local name=$1 max_s=$2
  shift 2
  local limit_s start=$SECONDS status=0
  limit_s=$(left_s)
  ((limit_s > max_s)) && limit_s=$max_s
  if ((limit_s < 10)); then
    record "$name" FAIL "not run: the ${budget_s} s budget is spent"
    return
  fi
  echo "== $name (at most ${limit_s} s)"
  timeout --kill-after=10 "$limit_s" "$@" || status=$?
  local took="$((SECONDS - start)) s"
  if ((status == 0)); then
    record "$name" PASS "$took"
  elif ((status == 124 || status == 137)); then
    record "$name" FAIL "timed out after $took"
  else
    record "$name" FAIL "exit $status after $took"
  fi
}

echo "== environment"
uname -a
head -2 /etc/os-release 2>/dev/null || true
echo "cores: $(nproc)"
g++ --version | head -1 || true
cmake --version | head -1 || true
[[ -x /usr/local/cuda/bin/nvcc ]] && /usr/local/cuda/bin/nvcc --version | tail -1
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv || true
else
  echo "nvidia-smi: absent"
fi

# The libtorch to build against: the CUDA wheel's, through python.
torch_prefix=""
torch_probe='import torch; print(torch.__version__, torch.cuda.is_available())'
if torch_line="$(python3 -c "$torch_probe" 2>/dev/null)"; then
  torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
  echo "python torch: $torch_line ($torch_prefix)"
  if ((dry_run)); then
    record environment PASS "dry run; python torch $torch_line"
  elif [[ "$torch_line" == *True ]]; then
    record environment PASS "torch $torch_line"
  else
    record environment FAIL "torch $torch_line: no CUDA device; CUDA tests will skip"
  fi
elif ((dry_run)); then
  echo "python torch: absent; the system's libtorch"
  record environment PASS "dry run; the system's libtorch"
else
  record environment FAIL "python3 cannot import torch; nothing to build against"
  exit 1
fi

# Unpacks the carried .debs the system lacks into $1. A package that another
# carried one depends on (libabsl20220623 for libabsl-dev) goes with that
# one, so headers and libraries always come from the same place. Sets
# `unpacked` and `on_system` to the counts.
unpacked=0
on_system=0
unpack_carried() {
  local prefix=$1 f name d
  local -A deb_of=() deps_of=() is_dependency=() needed=()
  for f in .gpu-carry/debs/*.deb; do
    [[ -e "$f" ]] || continue
    name="$(dpkg-deb -f "$f" Package)"
    deb_of[$name]=$f
    deps_of[$name]="$(dpkg-deb -f "$f" Depends | tr ',|' '\n\n' | sed 's/(.*//; s/:any//; s/ //g')"
  done
  for name in "${!deps_of[@]}"; do
    for d in ${deps_of[$name]}; do
      if [[ -n "${deb_of[$d]:-}" ]]; then is_dependency[$d]=1; fi
    done
  done
  local queue=()
  for name in "${!deb_of[@]}"; do
    [[ -n "${is_dependency[$name]:-}" ]] && continue
    if [[ "$(dpkg-query -W -f='${db:Status-Status}' "$name" 2>/dev/null)" == installed ]]; then
      echo "system has $name"
      on_system=$((on_system + 1))
    else
      queue+=("$name")
    fi
  done
  while ((${#queue[@]})); do
    name=${queue[0]}
    queue=("${queue[@]:1}")
    [[ -n "${needed[$name]:-}" ]] && continue
    needed[$name]=1
    for d in ${deps_of[$name]}; do
      if [[ -n "${deb_of[$d]:-}" ]]; then queue+=("$d"); fi
    done
  done
  for name in "${!needed[@]}"; do
    echo "unpacking ${deb_of[$name]##*/}"
    dpkg-deb -x "${deb_of[$name]}" "$prefix" || return 1
    unpacked=$((unpacked + 1))
  done
}

prefix="$build/carried"
prefix_path="$torch_prefix"
if [[ -d .gpu-carry/debs ]]; then
  rm -rf "$prefix"
  mkdir -p "$prefix"
  if unpack_carried "$prefix"; then
    record packages PASS "$unpacked unpacked, $on_system (with what they need) on the system"
  else
    record packages FAIL "could not unpack .gpu-carry/debs"
  fi
  if [[ -d "$prefix/usr" ]]; then
    prefix_path="${prefix_path:+$prefix_path;}$prefix/usr"
    # RUNPATH names Abseil's own libraries but not what they load in turn.
    export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
else
  record packages SKIP "no .gpu-carry/debs: the system's packages"
fi
if [[ -d .gpu-carry/fixtures ]]; then
  export DIFFUSIOND_FIXTURES="$PWD/.gpu-carry/fixtures"
fi
echo "DIFFUSIOND_FIXTURES=${DIFFUSIOND_FIXTURES:-(built-in default)}"

configure=(cmake -S . -B "$build" -G Ninja -DDIFFUSIOND_BUILD_SERVER=OFF
           -DDIFFUSIOND_BUILD_BENCHMARKS=OFF -DCMAKE_CUDA_ARCHITECTURES=90)
[[ -n "$prefix_path" ]] && configure+=("-DCMAKE_PREFIX_PATH=$prefix_path")
step configure 120 "${configure[@]}"
# Everything the build makes (libraries, test binaries and the programs tests
# start, gpu_bench): each selection below finds its tests built.
# -k 0: a target that fails to compile does not stop the others, so the
# selections whose binaries built still run.
step build "$build_cap_s" cmake --build "$build" -- -k 0

if ((!dry_run)); then
  # Parity tests run on this device when they read it.
  export DIFFUSIOND_TEST_DEVICE=cuda:0
fi
jobs=$(nproc)

# Prints "  N× reason" for each distinct GTEST_SKIP message in the verbose
# ctest log $1 (lines "<test number>: <text>", interleaved under -j).
skip_reasons() {
  awk '/^[0-9]+: .*: Skipped$/ { split($0, f, ":"); waiting[f[1]] = 1; next }
       { n = $0; sub(/:.*/, "", n)
         if (n in waiting) { sub(/^[0-9]+: /, ""); print; delete waiting[n] } }' "$1" |
    sort | uniq -c | awk '{ n = $1; $1 = ""; printf "  %d×%s\n", n, $0 }'
}

# Runs the ctest selection `"${@:2}"` as step $1, verbose so that skip
# messages show; appends its output to ctest.log and a tally to summary.txt.
selection() {
  local name=$1 log="$build/selection.log"
  shift
  rm -f "$log"
  step "$name" 100 ctest --test-dir "$build" -V -j "$jobs" --timeout 90 --output-log "$log" "$@"
  [[ -f "$log" ]] || return 0
  { echo "== $name: ctest $*"; cat "$log"; } >>"$out/ctest.log"
  local tally skipped
  # ctest says "100% tests passed out of N" when none failed.
  tally="$(grep -E 'tests passed(, [0-9]+ tests? failed)? out of' "$log" | tail -1 || true)"
  skipped="$(grep -c '\*\*\*Skipped' "$log" || true)"
  {
    echo "  ${tally:-no tests}; $skipped skipped"
    skip_reasons "$log"
  } | tee -a "$out/summary.txt"
}
selection "fp8 kernels" -L kernels
selection "z-image parity" -R ZImageParity
selection "vram tiers" -R Vram --no-tests=ignore
# CUDA tests outside kernels/ (those ran above); none may exist yet.
selection "other cuda tests" -R Cuda -LE kernels --no-tests=ignore

bench=("$build/tests/bench/gpu_bench" --json "$out/gpu-bench.json")
((dry_run)) && bench+=(--dry-run)
step gpu_bench 100 "${bench[@]}"

# The side by side against upstream diffusers: upstream's source carried as a
# tarball (deploy/gpu-carry.sh --diffusers) or given; its Python is the first
# that imports torch (on the GPU machine, the one the build used).
if [[ -z "$diffusers" && -f .gpu-carry/diffusers-src.tar.gz ]]; then
  rm -rf "$build/diffusers-src"
  mkdir -p "$build/diffusers-src"
  tar -xzf .gpu-carry/diffusers-src.tar.gz -C "$build/diffusers-src" && diffusers="$build/diffusers-src"
fi
torch_python=""
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import torch' 2>/dev/null; then torch_python="$(command -v "$py")"; break; fi
done
# --profile: one more Z-Image step of the port and its FP8 variant under
# libtorch's profiler, each op timed to its kernels' end: where the FP8
# step's extra time goes.
side=(tests/bench/vs_upstream.py --port-bin "$build/tests/bench/port_forward_cli" --json "$out/side-by-side.json"
      --markdown "$out/side-by-side.md" --profile z-image)
if ((dry_run)); then
  side+=(--device cpu --size demo --threads 2 --resident-fraction 0.65)
else
  side+=(--device cuda:0 --size real)
fi
if [[ -z "$torch_python" ]]; then
  record "side by side" FAIL "no Python here imports torch"
else
  side+=(--python "$torch_python")
  if [[ -n "$diffusers" ]]; then
    side+=(--diffusers "$diffusers")
  elif ((!dry_run)); then
    record "upstream source" FAIL "none carried (deploy/gpu-carry.sh --diffusers) or given: the port runs alone"
  fi
  step "side by side" 200 "$torch_python" "${side[@]}"
fi

if ((failed)); then
  record result FAIL "see gpu-check.log and ctest.log"
  exit 1
fi
record result PASS "$((SECONDS)) s"
