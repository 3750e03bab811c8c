#!/usr/bin/env bash
# The command line of deploy/gpu-check.sh or deploy/gpu-generate.sh, without
# a run (a run builds the tree and wants a GPU; docs/gpu.md): the script
# parses, --help prints the usage line, and what it does not take exits 2
# with the usage line on stderr.
#
#   gpu_check_script_test.sh PATH/TO/gpu-check.sh|gpu-generate.sh
set -euo pipefail
script=$1

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

bash -n "$script" || fail "bash -n $script"

help_text="$(bash "$script" --help)" || fail "--help exited non-zero"
[[ "$help_text" == usage:* ]] || fail "--help printed: $help_text"

# Runs the script with "$@", expecting exit 2 and a usage line on stderr.
expect_usage_error() {
  local stderr status=0
  stderr="$(bash "$script" "$@" 2>&1 >/dev/null)" || status=$?
  ((status == 2)) || fail "'$*' exited $status, expected 2"
  grep -q '^usage: ' <<<"$stderr" || fail "'$*' printed no usage line: $stderr"
}
expect_usage_error --bogus
expect_usage_error --dry-run --gpu
expect_usage_error --out
expect_usage_error --build
expect_usage_error --out ""

echo "$(basename "$script") command line: ok"
