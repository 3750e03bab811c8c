#!/usr/bin/env bash
# deploy/prometheus/rules.yml: promtool accepts it, and its unit tests
# (rules_test.yml, a firing and a quiet case per alert) pass.
#
#   prometheus_rules_test.sh PATH/TO/deploy/prometheus
#
# Exits 77 (ctest: skipped) without promtool, which Debian's prometheus
# package provides (deploy/install-deps.sh installs it).
set -euo pipefail
dir=$1

if ! command -v promtool >/dev/null; then
  echo "SKIP: promtool not found; install Debian's prometheus package (deploy/install-deps.sh)"
  exit 77
fi
# promtool resolves rule_files against the test file's folder, and the unit
# tests evaluate a day of synthetic series, which takes a few seconds.
promtool check rules "$dir/rules.yml"
promtool test rules "$dir/rules_test.yml"
